#!/bin/sh
# mpirun's launch agent for the test hosts of hosts.sh, in place of ssh:
#
#   mpirun --mca plm_rsh_agent tests/netns/agent.sh --host strata-h1,strata-h2 ...
#
# Open MPI calls it as `agent.sh HOST COMMAND...`; it runs COMMAND in HOST's
# network namespace and in a UTS namespace of its own whose host name is
# HOST, so the ranks there name themselves as a remote machine's would.
host="$1"
shift
exec ip netns exec "$host" unshare --uts sh -c 'hostname "$0" && eval "$*"' "$host" "$@"
