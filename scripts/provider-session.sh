# Sourced by scripts/with-keepassxc and scripts/with-kwallet (bash): what a throwaway Secret
# Service provider's session needs besides the provider itself. The sourcing script sets `prog`
# and `tmp` (its private directory, with log/ and bus/ in it) before it calls these.

# A caller may have blocked signals (a test runner's threads do), and every process started here
# would inherit a blocked SIGTERM and never stop: start again with none blocked (bash cannot).
# Call first, with the script's own arguments: unblock_signals "$0" "$@".
unblock_signals() {
    [ "${PROVIDER_SESSION_SIGNALS_UNBLOCKED:-}" != 1 ] || return 0
    export PROVIDER_SESSION_SIGNALS_UNBLOCKED=1
    exec /usr/bin/python3 -c 'import os, signal, sys
signal.pthread_sigmask(signal.SIG_SETMASK, [])
for name in ("SIGPIPE", "SIGXFSZ", "SIGINT"):  # ignored by python, or by a shell for a job it runs with &
    signal.signal(getattr(signal, name), signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$@"
}

dump_logs() {
    for f in "$tmp"/log/*.log; do
        [ -s "$f" ] && { echo "----- ${f##*/} -----" >&2; tail -n 20 "$f" >&2; }
    done
    return 0
}

# stop PID GRACE: SIGTERM, then SIGKILL after GRACE seconds (a provider stuck on a dialog
# ignores SIGTERM).
stop() {
    local pid=$1 n=$(($2 * 10))
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null || true
    while [ $n -gt 0 ] && kill -0 "$pid" 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

die() {
    echo "$prog: $*" >&2
    dump_logs
    exit 1
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# wait_for WHAT PID COMMAND...: polls COMMAND every 0.1 s for $timeout_s while PID lives.
wait_for() {
    local what=$1 pid=$2 deadline=$(($(now_ms) + timeout_s * 1000))
    shift 2
    until "$@"; do
        kill -0 "$pid" 2>/dev/null || die "process $pid exited while waiting for $what"
        [ "$(now_ms)" -lt "$deadline" ] || die "no $what after ${timeout_s} s"
        sleep 0.1
    done
}

# start_bus: a private session bus with no service directories, so nothing but the provider
# started here can own the name (a stock session bus would start gnome-keyring, or another
# provider, for it). Sets bus_pid and exports DBUS_SESSION_BUS_ADDRESS.
start_bus() {
    cat >"$tmp/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir=$tmp/bus</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
CONF
    dbus-daemon --config-file="$tmp/bus.conf" --nofork --nopidfile --nosyslog --print-address=3 \
        3>"$tmp/bus.address" </dev/null >"$tmp/log/dbus-daemon.log" 2>&1 &
    bus_pid=$!
    wait_for "bus address" "$bus_pid" test -s "$tmp/bus.address"
    DBUS_SESSION_BUS_ADDRESS=$(head -n 1 "$tmp/bus.address")
    export DBUS_SESSION_BUS_ADDRESS
}

# run_command COMMAND...: runs it as a child this shell waits for, so that the signals it gets are
# passed on (a foreground child would hold them back until it exits); <&0 keeps its standard
# input. Job control (set -m) keeps bash from starting it with SIGINT and SIGQUIT ignored. Sets
# `status` to its exit status.
run_command() {
    child=
    trap 'forward INT 130' INT
    trap 'forward TERM 143' TERM
    trap 'forward HUP 129' HUP
    set +e -m
    "$@" <&0 &
    child=$!
    set +m
    status=
    local code
    while :; do
        forwarded=0
        wait "$child"
        code=$?
        [ "$code" -eq 127 ] && [ -n "$status" ] && break
        status=$code
        [ "$forwarded" = 1 ] || break
    done
    set -e
}

forward() { # SIGNAL STATUS
    if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
        forwarded=1
        kill -"$1" "$child" 2>/dev/null || true
    else
        exit "$2"
    fi
}
