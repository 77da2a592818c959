#!/bin/busybox sh
# /init of the test guest (tests/support/guest.py): a stand-in Anaconda and the installed system in one.
#
# Netboot (inst.ks=URL or ks=URL on the kernel line): fetch the kickstart, run its %pre, "install",
# run its %post sections in file order (chroot into the fake sysroot /mnt/sysimage unless
# --nochroot), %onerror when a section exits non-zero; on success save the sysroot to the state
# disk and reboot. The firmware netboots again; the server has meanwhile switched this MAC to the
# local disk, whose syslinux boots this same initramfs with lablease.boot=disk.
# lablease.boot=disk: the installed system's boot: restore the sysroot from the state disk, run
# the oneshot units %post enabled (what systemd would), save the sysroot back, power off.
# Every line of ours on the console starts with "lablease-guest:"; tokens in URLs are masked.
/bin/busybox mkdir -p /proc /sys /dev /tmp /mnt /etc /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
export PATH=/sbin:/bin:/usr/sbin:/usr/bin HOME=/ TERM=dumb
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
echo 4 >/proc/sys/kernel/printk

SYSROOT=/mnt/sysimage
STATE_DISK=/dev/vdb
STATE_MAGIC=LABLEASE-STATE

say() { echo "lablease-guest: $*"; }
mask() { sed -e 's/\(token=\)[^ &]*/\1***/g'; }
stop() {  # stop poweroff|reboot MESSAGE
    say "$2"
    sync
    "$1" -f
    while :; do sleep 60; done  # init must never exit
}

load_modules() {
    # shellcheck disable=SC2013  # one module name a line
    for module in $(cat /lib/modules/lablease/order); do
        insmod "/lib/modules/lablease/$module.ko" || say "insmod $module failed"
    done
    say "modules loaded: $(tr '\n' ' ' </lib/modules/lablease/order)"
}

write_dhcp_script() {
    cat >/etc/udhcpc.script <<'EOF'
#!/bin/sh
case "$1" in
deconfig) ip addr flush dev "$interface"; ip link set "$interface" up ;;
bound|renew)
    ifconfig "$interface" "$ip" netmask "${subnet:-255.255.255.0}" up
    for gateway in $router; do route add default gw "$gateway" dev "$interface"; break; done
    : >/etc/resolv.conf
    for server in $dns; do echo "nameserver $server" >>/etc/resolv.conf; done
    ;;
esac
EOF
    chmod 0755 /etc/udhcpc.script
}

network_up() {
    ip link set lo up
    tries=0
    while [ ! -e /sys/class/net/eth0 ] && [ "$tries" -lt 50 ]; do sleep 0.1; tries=$((tries + 1)); done
    [ -e /sys/class/net/eth0 ] || { say "no eth0"; return 1; }
    write_dhcp_script
    udhcpc -i eth0 -s /etc/udhcpc.script -q -n -t 10 -T 1 >/dev/null 2>&1 || { say "DHCP failed on eth0"; return 1; }
    say "eth0: $(ip -4 -o addr show dev eth0 | awk '{print $4}'), gateway $(ip route | awk '/^default/ {print $3}')"
}

# --- the fake installed system ----------------------------------------------

write_systemctl() {  # a systemctl that manages .wants links as systemd does; other verbs do nothing
    cat >"$SYSROOT/usr/bin/systemctl" <<'EOF'
#!/bin/sh
verb=$1; shift
unit_file() {
    for dir in /etc/systemd/system /usr/lib/systemd/system /lib/systemd/system; do
        [ -f "$dir/$1" ] && { echo "$dir/$1"; return 0; }
    done
    return 1
}
for unit in "$@"; do
    case "$unit" in -*) continue ;; esac
    case "$verb" in
    enable)
        file=$(unit_file "$unit") || { echo "Failed to enable unit: Unit file $unit does not exist." >&2; exit 1; }
        for target in $(sed -n -e 's/^WantedBy=//p' -e 's/^RequiredBy=//p' "$file"); do
            mkdir -p "/etc/systemd/system/$target.wants"
            ln -sf "$file" "/etc/systemd/system/$target.wants/$unit"
            echo "Created symlink /etc/systemd/system/$target.wants/$unit -> $file."
        done ;;
    disable) rm -f /etc/systemd/system/*.wants/"$unit" ;;
    is-enabled) ls /etc/systemd/system/*.wants/"$unit" >/dev/null 2>&1 && echo enabled || { echo disabled; exit 1; } ;;
    *) echo "systemctl (lablease test guest): ignoring $verb $unit" >&2 ;;
    esac
done
EOF
    chmod 0755 "$SYSROOT/usr/bin/systemctl"
}

sysroot_mount() {  # mount the tmpfs for the installed system (empty)
    mkdir -p "$SYSROOT"
    mount -t tmpfs -o mode=0755 sysroot "$SYSROOT"
}

sysroot_enter() {  # what a chroot needs: busybox, and /proc /sys /dev /tmp
    mkdir -p "$SYSROOT/bin" "$SYSROOT/proc" "$SYSROOT/sys" "$SYSROOT/dev" "$SYSROOT/tmp"
    rm -f "$SYSROOT/bin/busybox"  # busybox --install made it a link to this /bin/busybox
    cp /bin/busybox "$SYSROOT/bin/busybox"
    mount -t proc proc "$SYSROOT/proc"
    mount -t sysfs sysfs "$SYSROOT/sys"
    mount -o bind /dev "$SYSROOT/dev"
    cp /etc/resolv.conf "$SYSROOT/etc/resolv.conf" 2>/dev/null
    return 0
}

sysroot_leave() {
    umount "$SYSROOT/proc" "$SYSROOT/sys" "$SYSROOT/dev"
    rm -rf "$SYSROOT/bin/busybox" "$SYSROOT/tmp/"*
}

sysroot_create() {  # a fresh "installed system": busybox applets, FHS directories, systemctl
    sysroot_mount
    for dir in bin sbin usr/bin usr/sbin usr/local/bin usr/local/sbin etc/systemd/system \
               usr/lib/systemd/system root tmp var/log run; do
        mkdir -p "$SYSROOT/$dir"
    done
    chmod 0700 "$SYSROOT/root"
    chmod 1777 "$SYSROOT/tmp"
    echo "lablease-test-guest" >"$SYSROOT/etc/hostname"
    /bin/busybox --install -s "$SYSROOT/bin"
    write_systemctl
    sysroot_enter
}

state_save() {  # the sysroot, as a gzipped tar after a 512-byte header line, onto the state disk
    sysroot_leave
    tar -czf /tmp/state.tgz -C "$SYSROOT" . || return 1
    size=$(wc -c </tmp/state.tgz)
    room=$(( $(cat "/sys/block/${STATE_DISK##*/}/size") * 512 - 512 ))
    [ "$size" -le "$room" ] || { say "the installed system ($size bytes) does not fit on $STATE_DISK"; return 1; }
    dd if=/tmp/state.tgz of="$STATE_DISK" bs=512 seek=1 conv=notrunc 2>/dev/null || return 1
    printf '%-511s\n' "$STATE_MAGIC 1 $size" | dd of="$STATE_DISK" bs=512 count=1 conv=notrunc 2>/dev/null || return 1
    sync
    say "installed system saved to $STATE_DISK ($size bytes)"
}

state_load() {  # restore the sysroot from the state disk; false when it holds none
    [ -b "$STATE_DISK" ] || { say "no state disk $STATE_DISK"; return 1; }
    # shellcheck disable=SC2046  # the header's words: magic, version, length
    set -- $(dd if="$STATE_DISK" bs=512 count=1 2>/dev/null | head -n 1 | tr -d '\0')
    [ "$1" = "$STATE_MAGIC" ] && [ "$2" = 1 ] && [ -n "$3" ] || return 1
    blocks=$(( ($3 + 511) / 512 ))
    dd if="$STATE_DISK" bs=512 skip=1 count="$blocks" 2>/dev/null | head -c "$3" >/tmp/state.tgz
    sysroot_mount
    tar -xzf /tmp/state.tgz -C "$SYSROOT" || { say "the state disk holds a broken installed system"; return 1; }
    sysroot_enter
}

# --- the installed system's boot --------------------------------------------

unit_key() { sed -n "s/^$1=//p" "$2" | head -n 1; }

run_units() {  # the oneshot units enabled in the sysroot, each once, as systemd would at boot
    ran=0
    for link in "$SYSROOT"/etc/systemd/system/*.target.wants/*.service; do
        [ -e "$link" ] || [ -L "$link" ] || continue
        unit=${link##*/}
        target=$(readlink "$link")
        file="$SYSROOT${target:-/etc/systemd/system/$unit}"
        [ -f "$file" ] || { say "first boot: $unit: no unit file"; continue; }
        condition=$(unit_key ConditionPathExists "$file")
        if [ -n "$condition" ] && [ ! -e "$SYSROOT$condition" ]; then
            say "first boot: $unit skipped (ConditionPathExists=$condition)"
            continue
        fi
        command=$(unit_key ExecStart "$file" | sed 's/^[-@+!:]*//')
        say "first boot: starting $unit: $command"
        ( chroot "$SYSROOT" /bin/sh -c "$command"; echo $? >/tmp/unit.rc ) 2>&1 | mask | sed "s/^/lablease-guest: $unit| /"
        say "first boot: $unit finished with exit status $(cat /tmp/unit.rc)"
        ran=$((ran + 1))
    done
    [ "$ran" -gt 0 ] || say "nothing to do on first boot"
}

boot_installed() {
    say "booting the installed system"
    if ! state_load; then
        say "nothing to do on first boot"
        stop poweroff "powering off"
    fi
    run_units
    state_save || say "could not save the installed system"
    stop poweroff "powering off"
}

# --- the installer ----------------------------------------------------------

fetch_kickstart() {  # fetch_kickstart URL FILE
    for try in 1 2 3 4 5; do
        wget -q -O "$2" "$1" 2>/tmp/wget.err && [ -s "$2" ] && return 0
        mask </tmp/wget.err
        say "fetching the kickstart failed (try $try of 5)"
        sleep 2
    done
    return 1
}

split_kickstart() {  # one NN.kind, NN.opts, NN.sh per %section ... %end, in file order
    mkdir -p /tmp/ks
    awk -v dir=/tmp/ks '
        inside && /^%end[ \t]*$/ { close(body); inside = 0; next }
        inside { print > body; next }
        /^%(pre|pre-install|post|onerror|traceback|packages|addon|anaconda)([ \t]|$)/ {
            n++; base = sprintf("%s/%02d", dir, n); body = base ".sh"
            kind = $1; sub(/^%/, "", kind); $1 = ""
            print kind > (base ".kind"); close(base ".kind")
            print $0 > (base ".opts"); close(base ".opts")
            printf "" > body; inside = 1
        }
        END { if (inside) print "kickstart: a section has no %end" > "/dev/stderr" }
    ' "$1"
}

run_section() {  # run_section NN: 0 when it succeeded
    kind=$(cat "/tmp/ks/$1.kind"); log=""; chroot_dir=""; take_log=""
    [ "$kind" = post ] && chroot_dir=$SYSROOT
    # shellcheck disable=SC2013  # the options are words
    for option in $(cat "/tmp/ks/$1.opts"); do
        if [ -n "$take_log" ]; then log=$option; take_log=""; continue; fi
        case "$option" in
        --log=*|--logfile=*) log=${option#*=} ;;
        --log|--logfile) take_log=1 ;;
        --nochroot) chroot_dir="" ;;
        esac
    done
    label=$(echo "%$kind $(cat "/tmp/ks/$1.opts")" | sed 's/  */ /g; s/ $//')
    say "running $label"
    if [ -n "$chroot_dir" ]; then
        cp "/tmp/ks/$1.sh" "$chroot_dir/tmp/ks-script-$1"
        set -- chroot "$chroot_dir" /bin/sh "/tmp/ks-script-$1"
    else
        set -- sh "/tmp/ks/$1.sh"
    fi
    logfile=/dev/null
    if [ -n "$log" ]; then logfile="$chroot_dir$log"; mkdir -p "${logfile%/*}"; fi
    rm -f /tmp/ks/rc
    ( "$@"; echo $? >/tmp/ks/rc ) 2>&1 | tee -a "$logfile" | mask | sed "s/^/lablease-guest: %$kind| /"
    status=$(cat /tmp/ks/rc 2>/dev/null || echo 1)
    say "$label exited with status $status"
    return "$status"
}

run_sections() {  # run_sections KIND: every section of that kind, in file order; false at the first failure
    for kindfile in /tmp/ks/*.kind; do
        [ -e "$kindfile" ] || continue
        number=${kindfile##*/}; number=${number%.kind}
        [ "$(cat "$kindfile")" = "$1" ] || continue
        run_section "$number" || { failed="%$1 section $number"; return 1; }
    done
}

install_failed() {
    say "install failed: $failed"
    run_sections onerror || say "%onerror failed too"
    stop poweroff "install failed; powering off"
}

install() {
    ks=""
    # shellcheck disable=SC2013  # the kernel's words
    for word in $(cat /proc/cmdline); do
        case "$word" in inst.ks=*|ks=*) ks=${word#*=} ;; esac
    done
    [ -n "$ks" ] || stop poweroff "no inst.ks= on the kernel command line; powering off"
    say "fetching the kickstart from $(echo "$ks" | mask)"
    fetch_kickstart "$ks" /tmp/ks.cfg || stop poweroff "no kickstart; powering off"
    split_kickstart /tmp/ks.cfg
    say "kickstart: $(cat /tmp/ks/*.kind 2>/dev/null | tr '\n' ' ')"
    sysroot_create
    run_sections pre || install_failed
    say "installing (stand-in: nothing to copy)"
    run_sections post || install_failed
    state_save || { failed="saving the installed system"; install_failed; }
    stop reboot "install finished; rebooting"
}

say "started ($(uname -r))"
load_modules
network_up || say "continuing without a network"
case " $(cat /proc/cmdline) " in
*" lablease.boot=disk "*) boot_installed ;;
*) install ;;
esac
