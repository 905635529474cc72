# Three "machines" for the shell tests: network namespaces TAGa, TAGb and TAGc, each
# with one interface (named TAGa, TAGb, TAGc; addresses NET.1, NET.2 and NET.3) whose
# veth peer sits on a bridge inside a fourth namespace, TAGsw. Every interface lives in
# a namespace made here: nothing touches the machine's own network. NET is a /24 of the
# benchmarking range 198.18.0.0/15. Needs root. Source it, then:
#
#   netns_available TAG         true when this process may make namespaces
#   netns_up TAG NET            makes them; false when they cannot reach each other
#   netns_down TAG              kills what runs in them and removes them

netns_available() {
  ip netns add "$1x" 2>/dev/null || return 1
  ip netns del "$1x"
}

netns_up() {
  local tag=$1 net=$2 i=1 n
  ip netns add "${tag}sw" || return 1
  ip -n "${tag}sw" link add br0 type bridge && ip -n "${tag}sw" link set br0 up || return 1
  for n in a b c; do
    ip netns add "$tag$n" || return 1
    # Made inside the node's namespace, its peer put straight into the switch's.
    ip -n "$tag$n" link add "$tag$n" type veth peer name "port$n" netns "${tag}sw" || return 1
    ip -n "${tag}sw" link set "port$n" master br0 up
    ip -n "$tag$n" addr add "$net.$i/24" dev "$tag$n"
    ip -n "$tag$n" link set "$tag$n" up
    ip -n "$tag$n" link set lo up
    i=$((i + 1))
  done
  # Reachable: a connection to a closed port is refused at once rather than timing out.
  local probe
  probe=$(ip netns exec "${tag}b" timeout 3 bash -c "exec 3<>/dev/tcp/$net.1/9" 2>&1)
  [[ $probe == *refused* ]]
}

netns_down() {
  local tag=$1 n pids
  for n in a b c; do
    pids=$(ip netns pids "$tag$n" 2>/dev/null || true)
    [[ -n $pids ]] && kill -9 $pids 2>/dev/null
    ip netns del "$tag$n" 2>/dev/null
  done
  ip netns del "${tag}sw" 2>/dev/null  # its bridge and ports go with it
  return 0
}
