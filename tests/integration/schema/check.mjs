// SPDX-License-Identifier: Apache-2.0
// ajv in strict mode (every strict option on: unknown keywords, union types, required properties
// not declared, ...) for rdmactl's draft 2020-12 schemas, then documents against them.
//   node check.mjs compile SCHEMA...                 each schema compiles strictly
//   node check.mjs validate SCHEMA FILE...           each JSON or YAML file; prints "FILE valid" or
//                                                    "FILE invalid: <first error>"; exit 0 always
import Ajv2020 from "ajv/dist/2020.js";
import yaml from "js-yaml";
import fs from "fs";

function compile(file) {
  const ajv = new Ajv2020({strict: true, allErrors: true});
  return ajv.compile(JSON.parse(fs.readFileSync(file, "utf8")));
}

const [mode, ...args] = process.argv.slice(2);
if (mode === "compile") {
  let failed = 0;
  for (const file of args) {
    try {
      compile(file);
      console.log(`${file}: compiles in strict mode`);
    } catch (e) {
      console.log(`${file}: ${e.message}`);
      failed++;
    }
  }
  process.exit(failed ? 1 : 0);
} else if (mode === "validate") {
  const validate = compile(args[0]);
  for (const file of args.slice(1)) {
    const text = fs.readFileSync(file, "utf8");
    // YAML 1.2 core schema, as yaml-cpp reads the spec.
    const document = file.endsWith(".json") ? JSON.parse(text) : yaml.load(text, {schema: yaml.CORE_SCHEMA});
    if (validate(document)) {
      console.log(`${file} valid`);
    } else {
      const e = validate.errors[0];
      console.log(`${file} invalid: ${e.instancePath || "/"} ${e.message}`);
    }
  }
} else {
  console.error("usage: node check.mjs compile SCHEMA... | validate SCHEMA FILE...");
  process.exit(64);
}
