#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Pins the DaemonSet's image (rdmactl.yaml) to the digest of the image you pushed, in
# kustomization.yaml's `images:` (then: kubectl apply -k packaging/kubernetes):
#
#   packaging/kubernetes/pin-image.sh REPOSITORY:TAG        the digest the registry has for the tag
#   packaging/kubernetes/pin-image.sh REPOSITORY@sha256:HEX  a digest you already have (docker push
#                                                            prints it: "TAG: digest: sha256:...")
#
# A tag is resolved in the registry, never from the local image store (a local image ID is not
# the digest the registry serves): with `skopeo inspect --format '{{.Digest}}' docker://REF`
# (skopeo-inspect(1): Digest is the top-level manifest's, a multi-arch list's own digest), or
# else `docker buildx imagetools inspect REF` (its "Digest:" line, also the top-level one).
# Nothing is guessed: no tool, no digest, or a malformed one, and kustomization.yaml is left as
# it was (exit 1).
#
# KUSTOMIZATION=FILE writes another file than the kustomization.yaml beside this script.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
kustomization=${KUSTOMIZATION:-$here/kustomization.yaml}
# The image rdmactl.yaml names (before its @sha256:UNPINNED): kustomize replaces references with
# this name only.
placeholder_name=registry.example.com/rdmactl

die() { echo "pin-image.sh: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: pin-image.sh REPOSITORY:TAG | REPOSITORY@sha256:HEX"
ref=$1

case $ref in
  *@*)
    repository=${ref%%@*}
    digest=${ref#*@}
    ;;
  *)
    # REPOSITORY:TAG, where a registry's :port is part of the repository (before the last /).
    last=${ref##*/}
    case $last in
      *:*) repository=${ref%:*} ;;
      *) die "$ref: no tag and no digest (REPOSITORY:TAG or REPOSITORY@sha256:HEX)" ;;
    esac
    if command -v skopeo > /dev/null 2>&1; then
      digest=$(skopeo inspect --format '{{.Digest}}' "docker://$ref") || die "skopeo inspect docker://$ref failed"
    elif command -v docker > /dev/null 2>&1 && docker buildx imagetools inspect --help > /dev/null 2>&1; then
      digest=$(docker buildx imagetools inspect "$ref" | sed -n 's/^Digest:[[:space:]]*//p' | head -n 1) ||
        die "docker buildx imagetools inspect $ref failed"
    else
      die "cannot resolve $ref to a digest: install skopeo or docker buildx, or pass REPOSITORY@sha256:HEX"
    fi
    ;;
esac

printf '%s\n' "$digest" | grep -Eq '^sha256:[0-9a-f]{64}$' || die "'$digest' is not a sha256 digest (sha256: and 64 hex digits)"
printf '%s\n' "$repository" | grep -Eq '^[a-z0-9]([a-z0-9._:/-]*[a-z0-9])?$' || die "'$repository' is not an image repository"
[ -f "$kustomization" ] || die "$kustomization: no such file"
grep -q '^images:' "$kustomization" || die "$kustomization: no 'images:' line to replace"

tmp=$(mktemp "$kustomization.XXXXXX")
trap 'rm -f "$tmp"' EXIT
{
  sed '/^images:/,$d' "$kustomization"
  echo "images:"
  echo "  - name: $placeholder_name"
  echo "    newName: $repository"
  echo "    digest: $digest"
} > "$tmp"
chmod 644 "$tmp"
mv "$tmp" "$kustomization"
trap - EXIT
echo "pinned $placeholder_name to $repository@$digest in $kustomization"
