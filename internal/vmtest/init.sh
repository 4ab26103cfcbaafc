#!/bin/sh
# vmtest guest init (pid 1). Reads vm.* from the kernel command line:
#   vm.name (a/b), vm.ip, vm.nomods (comma list of modules not to load),
#   vm.agent (agent binary on the share), vm.shell=1 (console shell),
#   vm.probe=1 (print a marker and power off: the accelerator probe).
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/root TERM=vt100
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mkdir -p /dev/pts && mount -t devpts devpts /dev/pts
for kv in $(cat /proc/cmdline); do
	case $kv in vm.*=*) k=${kv%%=*}; k=${k#vm.}; eval "VM_$k=\${kv#*=}";; esac
done
say() { echo "vmtest-init[$VM_name]: $*"; echo "$*" >>/tmp/init.log; }
if [ -n "$VM_probe" ]; then echo VMTEST_PROBE_OK; poweroff -f; fi
say "kernel $(uname -r)"
skip=" $(echo "$VM_nomods" | tr , ' ') "
for m in $(cat /mods/order); do
	case "$skip" in *" $m "*) say "skip module $m"; continue;; esac
	insmod /mods/$m.ko || say "insmod $m failed"
done
mkdir -p /host
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 host0 /host || say "9p mount failed"
hostname "$VM_name"
ip link set lo up
ip addr add "$VM_ip/24" dev eth0 && ip link set eth0 up || say "eth0 setup failed"
if rdma link add rxe0 type rxe netdev eth0; then say "rxe0 on eth0"; else say "rdma link add rxe0 failed"; fi
state=/host/.vmtest/$VM_name
mkdir -p "$state" && cp /tmp/init.log "$state/init.log"
echo VMTEST_INIT_DONE
if [ -n "$VM_shell" ]; then
	[ -x "$VM_agent" ] && "$VM_agent" -dir "$state" -name "$VM_name" >/tmp/agent.log 2>&1 &
	echo "vmtest: console shell; the share is at /host; exit powers off"
	setsid cttyhack sh
elif [ -x "$VM_agent" ]; then
	"$VM_agent" -dir "$state" -name "$VM_name"
	say "agent exited: $?"
elif [ -x "/host/$VM_name.sh" ]; then
	"/host/$VM_name.sh" >"/host/$VM_name.out" 2>&1
	say "/host/$VM_name.sh exited: $?"
fi
sync
poweroff -f
