# Shared by the shell tests: waiting on a condition with a deadline, and a free port.
# wait_for calls the test's own `fail` when the deadline passes.

# wait_for SECONDS DESCRIPTION COMMAND...: runs COMMAND every half second until it succeeds.
wait_for() {
  local deadline=$((SECONDS + $1)) what=$2
  shift 2
  until "$@"; do
    ((SECONDS < deadline)) || fail "timed out waiting for $what"
    sleep 0.5
  done
}

# A TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
