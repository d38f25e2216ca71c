#!/usr/bin/env bash
# status.sh (make cluster-status): kubeconfig, Prometheus URL, daemons, nodes and pods of the local cluster.
# Exits 1 when the cluster is not up.

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [ ! -f "$S/cluster.env" ]; then
	echo "local cluster is not up (no $S/cluster.env); run: make cluster-up"
	exit 1
fi
echo "state dir   $S"
echo "env file    $S/cluster.env   (. $S/cluster.env exports everything)"
grep -E '^(KUBECONFIG|MESHBENCH_PROMETHEUS_URL|MESHBENCH_NODES|MESHBENCH_KUBERNETES_VERSION)=' "$S/cluster.env" | sed 's/^/  /'
echo
down=0
printf 'daemons    '
for f in "$S"/run/pids/*.pid; do
	[ -e "$f" ] || continue
	n=$(basename "$f" .pid)
	if pid_is_ours "$(cat "$f")"; then printf ' %s' "$n"; else printf ' %s(DEAD)' "$n"; down=1; fi
done
echo
if curl -sf --max-time 3 "$PROM_URL/-/ready" >/dev/null; then
	up=$(curl -sf --max-time 3 "$PROM_URL/api/v1/query" --data-urlencode 'query=up' |
		jq -r '[.data.result[] | "\(.metric.job)@\(.metric.node)=\(.value[1])"] | join(" ")')
	echo "prometheus  $PROM_URL ready; targets: $up"
else
	echo "prometheus  $PROM_URL NOT READY"
	down=1
fi
echo
"$S/bin/tools/mbctl" -kubeconfig "$S/kubeconfig/admin.kubeconfig" status || down=1
exit "$down"
