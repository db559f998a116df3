# fstypes: ext3
test_debug() {
	try setcow $M 1
	printf 'line one\n' > $M/a.c
	ln $M/a.c $M/b.c
	vim.tiny -u NONE -i NONE -n -e -s -V1 -c '%s/one/ONE/' -c 'wq' $M/a.c </dev/null 2>&1 | tail -8
	cat $M/a.c $M/b.c; ls -li $M $L/.cowlinkfs-work
	printf ':%%s/line/LINE/\n:wq\n' >/tmp/vi.in
	(busybox vi $M/b.c </tmp/vi.in >/tmp/bb.out 2>&1; echo "bb rc=$?")
	od -c /tmp/bb.out | tail -5
	cat $M/b.c
	false
}
