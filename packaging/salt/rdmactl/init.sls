# Salt state: install the spec from the master and converge with rdmactl when it drifts.
#
#   salt 'gpu-*' state.apply rdmactl            # converge
#   salt 'gpu-*' state.apply rdmactl test=True  # report only
#
# The spec lives on the master at salt://rdmactl/fabric.yaml; the minion id is the node name.
/etc/rdmactl/fabric.yaml:
  file.managed:
    - source: salt://rdmactl/fabric.yaml
    - makedirs: True
    - mode: "0644"
    # Reject a broken spec before it replaces the one in place.
    - check_cmd: /usr/sbin/rdmactl validate -f

rdmactl-apply:
  cmd.run:
    - name: /usr/sbin/rdmactl --node {{ grains['id'] }} apply -f /etc/rdmactl/fabric.yaml
    # Only when there is drift: plan exits 0 when the host already matches.
    - unless: /usr/sbin/rdmactl --node {{ grains['id'] }} plan -f /etc/rdmactl/fabric.yaml
    - success_retcodes: [3]
    - require:
      - file: /etc/rdmactl/fabric.yaml
