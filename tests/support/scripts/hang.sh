#!/bin/sh
# Stand-in for a model that hangs: starts a child that would outlive it, records
# both pids, ignores SIGINT and SIGTERM (so the engine has to escalate to SIGKILL)
# and sleeps.
trap '' INT TERM
sleep 1000 &
echo "$$ $!" > "$1"
echo "hang.sh: waiting forever" >&2
while true; do sleep 1; done
