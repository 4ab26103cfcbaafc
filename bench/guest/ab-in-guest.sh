#!/bin/bash
# ab-in-guest.sh OUT ROUNDS 'TEST ARGS' OLD.test NEW.test
#
# Writes OUT, a self-contained sh script for vmexec that unpacks the two
# test binaries into guest a's RAM (/tmp, not the 9p share) and runs them
# alternately, OLD then NEW, ROUNDS times, with the same arguments
# (bench/README.md). For example:
#
#	git archive COMMIT | tar -x -C DIR     # a checkout of each commit
#	CGO_ENABLED=0 go test -c -o /tmp/old.test ./cm/     # in each checkout
#	bench/guest/ab-in-guest.sh /tmp/ab 8 "-test.run ^\$ -test.bench GuestCreateQP\$ -test.benchmem -test.benchtime 2000x" /tmp/old.test /tmp/new.test
#	cd cm && ../bin/vmexec /tmp/ab            # kernel CM; "-nocm-a" and GuestCreateQPAuto for the engine
set -eu
out=$1 rounds=$2 args=$3 old=$4 new=$5
hdr=$(mktemp)
{
	echo '#!/bin/sh'
	echo 'self="$0"'
	echo 'n=$(grep -n -a -m1 "^__END_HEADER__$" "$self" | cut -d: -f1)'
	echo 'pos=$(( $(head -n "$n" "$self" | wc -c) + 1 ))'
	i=1
	for b in "$old" "$new"; do
		sz=$(stat -c %s "$b")
		echo "tail -c +\$pos \"\$self\" | head -c $sz > /tmp/b$i && chmod +x /tmp/b$i; pos=\$((pos + $sz))"
		i=$((i + 1))
	done
	echo 'cd /tmp'
	echo "for r in \$(seq $rounds); do for b in 1 2; do echo \"round \$r bin \$b\"; /tmp/b\$b $args 2>&1 | grep -E '^Benchmark|FAIL'; done; done"
	echo 'exit 0'
	echo '__END_HEADER__'
} >"$hdr"
cat "$hdr" "$old" "$new" >"$out"
chmod +x "$out"
rm -f "$hdr"
