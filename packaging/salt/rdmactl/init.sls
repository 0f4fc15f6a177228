# SPDX-License-Identifier: Apache-2.0
# Salt state: install the fabric spec from the master and converge each node to it with rdmactl.
#
#   salt 'gpu-*' saltutil.sync_all                   # once: ship _modules/ and _states/ (below) to the minions
#   salt 'gpu-*' state.apply rdmactl test=True       # the planned changes, old/new per field; writes nothing
#   salt 'gpu-*' state.apply rdmactl                 # install the spec, apply what drifted
#
# Put this directory (rdmactl/) and the _modules/ and _states/ directories beside it into a file
# root (e.g. /srv/salt), and the spec at salt://rdmactl/fabric.yaml.
#
# rdmactl.converged validates and plans the NEW spec before anything is written (an invalid one
# fails with rdmactl's file:line:column errors and leaves /etc/rdmactl/fabric.yaml as it was),
# then installs it atomically and runs `rdmactl apply` only when the plan found drift. A firmware
# change already staged for the next cold boot is not applied or reported again. The node name
# for the spec's `nodes:` globs is the minion id's short host name (gpu-01.example.com -> gpu-01).
{#- The options, all optional besides source or contents (this Jinja comment is not rendered):
      - contents: {{ pillar['rdmactl_spec'] | json }}   instead of source: a spec kept in pillar
      - dest: /etc/rdmactl/fabric.yaml       the default; rdmactl.service and rdmactl-apply read it
      - node: gpu-01                         override the node name (default: short minion id)
      - netns: lab1                          rdmactl --netns
      - root: /srv/fixture                   rdmactl --root (tests and demos)
      - lock_timeout: 300s                   wait for another rdmactl (e.g. the agent) writing
    The binary is the `rdmactl.binary` option (minion config, grain, pillar or master config, as
    config.get reads it), else rdmactl on PATH, else /usr/sbin/rdmactl. Without one the modules do
    not load (their __virtual__ says why) and this state is not found on that minion.
#}
rdmactl:
  rdmactl.converged:
    - source: salt://rdmactl/fabric.yaml
