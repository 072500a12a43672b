#!/usr/bin/env bash
# Simulated hosts for the cluster tests: network namespaces NET-serve (10.77.0.1), NET-w1
# (10.77.0.2) and NET-outsider (10.77.0.3) on one bridge, NET-br, which also gives the caller's
# own namespace 10.77.0.254. Root only (ip from iproute2); exits 1 where namespaces or veth
# pairs cannot be made, so the test skips.
#   usage: tests/cluster_hosts.sh up NET | down NET | cut NET HOST | mend NET HOST
set -uo pipefail
action=$1 net=$2
hosts=(serve w1 outsider)
case "$action" in
  up)
    ip link add "$net-br" type bridge || exit 1
    ip addr add 10.77.0.254/24 dev "$net-br" && ip link set "$net-br" up || exit 1
    for i in "${!hosts[@]}"; do
      host=${hosts[$i]} ns="$net-${hosts[$i]}"
      ip netns add "$ns" || exit 1
      ip link add "$net-$i" type veth peer name "$net-$i-in" || exit 1
      ip link set "$net-$i" master "$net-br" up
      ip link set "$net-$i-in" netns "$ns"
      ip -n "$ns" addr add "10.77.0.$((i + 1))/24" dev "$net-$i-in"
      ip -n "$ns" link set "$net-$i-in" up
      ip -n "$ns" link set lo up
    done
    ping -c 1 -W 2 10.77.0.1 >/dev/null 2>&1 || ip netns exec "$net-w1" true  # ping may be absent
    ;;
  down)
    for i in "${!hosts[@]}"; do ip netns del "$net-${hosts[$i]}" 2>/dev/null; done
    ip link del "$net-br" 2>/dev/null
    true
    ;;
  cut | mend)
    for i in "${!hosts[@]}"; do
      [ "${hosts[$i]}" = "$3" ] && ip link set "$net-$i" "$([ "$action" = cut ] && echo down || echo up)"
    done
    ;;
  *) sed -n '2,6p' "$0"; exit 2 ;;
esac
