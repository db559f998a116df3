// SPDX-License-Identifier: GPL-2.0
/*
 * replaylog: read a dm-log-writes log and replay a prefix of it onto a
 * file or block device, to see the disk as it would be after a power cut
 * at that point (tests/t_replay.sh).
 *
 *   replaylog list LOG                  one line per entry:
 *                                       INDEX FLAGS SECTOR NR_SECTORS [MARK]
 *                                       FLAGS: flush,fua,discard,mark,meta or -
 *   replaylog replay LOG TARGET COUNT   apply entries [0, COUNT) to TARGET
 *                                       (opened O_RDWR), then fsync it
 *   replaylog find LOG MARK             print the index of the entry that
 *                                       carries the mark text MARK
 *
 * The format is the one drivers/md/dm-log-writes.c writes (little endian):
 * at byte 0 the super {__le64 magic, version, nr_entries; __le32
 * sectorsize}; from byte sectorsize on, nr_entries entries, each a
 * one-sector header {__le64 sector, nr_sectors, flags, data_len} followed,
 * unless it is a DISCARD, by nr_sectors sectors of the data written.  A
 * MARK carries its text (data_len bytes) in the header sector, after the
 * struct, and no data.  sector and nr_sectors count sectors of the size in
 * the super (the logical block size of the logged device); the super's
 * nr_entries is up to date once the log-writes target is removed.
 *
 * Replay writes the data of a write at byte sector * sectorsize, and
 * zeroes for a discard (a regular-file target gets a hole, which reads as
 * zeroes); marks and flushes without data write nothing.  A block device
 * or a non-empty regular file is the size it is: an entry past its end is
 * an error.  An empty regular file grows as written.
 *
 * Exits 0 on success, 1 on any error, with a message on stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <linux/falloc.h>
#include <linux/fs.h>

#define LOG_FLUSH_FLAG		(1 << 0)
#define LOG_FUA_FLAG		(1 << 1)
#define LOG_DISCARD_FLAG	(1 << 2)
#define LOG_MARK_FLAG		(1 << 3)
#define LOG_METADATA_FLAG	(1 << 4)
#define LOG_KNOWN_FLAGS		0x1f

#define WRITE_LOG_VERSION	1ULL
#define WRITE_LOG_MAGIC		0x6a736677736872ULL

#define SUPER_SIZE		28	/* 3 * __le64 + __le32 */
#define ENTRY_SIZE		32	/* 4 * __le64 */
#define CHUNK			(1 << 20)

struct log {
	const char *path;
	int fd;
	uint64_t size;		/* bytes */
	uint64_t nr_entries;
	uint32_t ss;		/* sector size */
	uint64_t index;		/* of the next entry */
	uint64_t pos;		/* byte offset of the next entry's header */
	unsigned char *hdr;	/* one sector */
};

struct entry {
	uint64_t index;
	uint64_t sector;
	uint64_t nr_sectors;
	uint64_t flags;
	uint64_t data_len;
	uint64_t data_pos;	/* byte offset of the data in the log */
	char mark[65536];	/* the text of a MARK, NUL-terminated */
};

static int err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int err(const char *fmt, ...)
{
	va_list ap;

	fputs("replaylog: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* pread all of @len bytes at @off; a short read is an error */
static int read_at(int fd, const char *path, void *buf, size_t len,
		   uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pread(fd, (char *)buf + done, len - done,
				  (off_t)(off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return err("%s: read at byte %" PRIu64 ": %s", path,
				   off + done, strerror(errno));
		if (r == 0)
			return err("%s: unexpected end of file at byte %" PRIu64,
				   path, off + done);
		done += r;
	}
	return 0;
}

static int write_at(int fd, const char *path, const void *buf, size_t len,
		    uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pwrite(fd, (const char *)buf + done, len - done,
				   (off_t)(off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return err("%s: write at byte %" PRIu64 ": %s", path,
				   off + done, strerror(errno));
		if (r == 0)
			return err("%s: no room at byte %" PRIu64, path,
				   off + done);
		done += r;
	}
	return 0;
}

/* The size of a regular file or block device, -1 for anything else. */
static int fd_size(int fd, const char *path, uint64_t *size, int *is_reg)
{
	struct stat st;

	if (fstat(fd, &st))
		return err("%s: %s", path, strerror(errno));
	*is_reg = S_ISREG(st.st_mode);
	if (S_ISREG(st.st_mode)) {
		*size = st.st_size;
		return 0;
	}
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, size))
			return err("%s: BLKGETSIZE64: %s", path, strerror(errno));
		return 0;
	}
	return err("%s: not a regular file or block device", path);
}

static int log_open(struct log *log, const char *path)
{
	unsigned char super[SUPER_SIZE];
	uint64_t magic, version, max;
	int is_reg;

	memset(log, 0, sizeof(*log));
	log->path = path;
	log->fd = open(path, O_RDONLY);
	if (log->fd < 0)
		return err("%s: %s", path, strerror(errno));
	if (fd_size(log->fd, path, &log->size, &is_reg))
		return -1;
	if (log->size < SUPER_SIZE)
		return err("%s: %" PRIu64 " bytes, too small for a log super",
			   path, log->size);
	if (read_at(log->fd, path, super, sizeof(super), 0))
		return -1;
	magic = le64(super);
	version = le64(super + 8);
	log->nr_entries = le64(super + 16);
	log->ss = le32(super + 24);
	if (magic != WRITE_LOG_MAGIC)
		return err("%s: bad magic %#" PRIx64 " (a dm-log-writes log has %#llx)",
			   path, magic, WRITE_LOG_MAGIC);
	if (version != WRITE_LOG_VERSION)
		return err("%s: log version %" PRIu64 ", only version %llu is known",
			   path, version, WRITE_LOG_VERSION);
	if (log->ss < 512 || log->ss > 65536 || (log->ss & (log->ss - 1)))
		return err("%s: bad sector size %" PRIu32
			   " (a power of two from 512 to 65536)", path, log->ss);
	/* Every entry takes at least its header sector. */
	max = log->size / log->ss ? log->size / log->ss - 1 : 0;
	if (log->nr_entries > max)
		return err("%s: the super counts %" PRIu64
			   " entries, but %" PRIu64 " bytes hold at most %" PRIu64,
			   path, log->nr_entries, log->size, max);
	log->hdr = malloc(log->ss);
	if (!log->hdr)
		return err("out of memory");
	log->pos = log->ss;
	return 0;
}

static void flag_words(uint64_t flags, char *buf, size_t len)
{
	static const char *const words[] = {
		"flush", "fua", "discard", "mark", "meta"
	};
	size_t i;

	buf[0] = 0;
	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (!(flags & (1ULL << i)))
			continue;
		if (buf[0])
			strncat(buf, ",", len - strlen(buf) - 1);
		strncat(buf, words[i], len - strlen(buf) - 1);
	}
	if (!buf[0])
		snprintf(buf, len, "-");
}

/* Read and check the next entry's header; 1 at the end of the log. */
static int log_next(struct log *log, struct entry *e)
{
	uint64_t room, len;

	if (log->index >= log->nr_entries)
		return 1;
	e->index = log->index;
	if (log->pos > log->size || log->size - log->pos < log->ss)
		return err("%s: entry %" PRIu64 ": its header at byte %" PRIu64
			   " is past the end of the log (%" PRIu64 " bytes)",
			   log->path, e->index, log->pos, log->size);
	if (read_at(log->fd, log->path, log->hdr, log->ss, log->pos))
		return -1;
	e->sector = le64(log->hdr);
	e->nr_sectors = le64(log->hdr + 8);
	e->flags = le64(log->hdr + 16);
	e->data_len = le64(log->hdr + 24);
	e->data_pos = log->pos + log->ss;
	e->mark[0] = 0;
	if (e->flags & ~(uint64_t)LOG_KNOWN_FLAGS)
		return err("%s: entry %" PRIu64 ": unknown flags %#" PRIx64,
			   log->path, e->index, e->flags);
	if (e->flags & LOG_MARK_FLAG) {
		if (e->data_len > log->ss - ENTRY_SIZE)
			return err("%s: entry %" PRIu64 ": a mark of %" PRIu64
				   " bytes does not fit its %" PRIu32 "-byte sector",
				   log->path, e->index, e->data_len, log->ss);
		if (e->nr_sectors)
			return err("%s: entry %" PRIu64 ": a mark with %" PRIu64
				   " sectors of data", log->path, e->index,
				   e->nr_sectors);
		memcpy(e->mark, log->hdr + ENTRY_SIZE, e->data_len);
		e->mark[e->data_len] = 0;
	} else if (e->data_len) {
		/* Only DAX logging (removed before Linux 6.1) wrote these. */
		return err("%s: entry %" PRIu64 ": inline data (data_len %" PRIu64
			   ") is not supported", log->path, e->index, e->data_len);
	}
	if (e->nr_sectors > INT64_MAX / log->ss ||
	    e->sector > INT64_MAX / log->ss - e->nr_sectors)
		return err("%s: entry %" PRIu64 ": sectors %" PRIu64 "+%" PRIu64
			   " are out of range", log->path, e->index, e->sector,
			   e->nr_sectors);
	len = log->ss;
	if (!(e->flags & LOG_DISCARD_FLAG)) {
		room = (log->size - e->data_pos) / log->ss;
		if (e->nr_sectors > room)
			return err("%s: entry %" PRIu64 ": %" PRIu64
				   " sectors of data at byte %" PRIu64
				   " run past the end of the log (%" PRIu64 " bytes)",
				   log->path, e->index, e->nr_sectors, e->data_pos,
				   log->size);
		len += e->nr_sectors * log->ss;
	}
	log->pos += len;
	log->index++;
	return 0;
}

static void print_mark(const char *s)
{
	putchar(' ');
	for (; *s; s++)
		putchar(*s > ' ' && *s < 127 ? *s : '?');
}

static int do_list(struct log *log)
{
	struct entry *e = malloc(sizeof(*e));
	char words[64];
	int r;

	if (!e)
		return err("out of memory");
	while (!(r = log_next(log, e))) {
		flag_words(e->flags, words, sizeof(words));
		printf("%" PRIu64 " %s %" PRIu64 " %" PRIu64, e->index, words,
		       e->sector, e->nr_sectors);
		if (e->flags & LOG_MARK_FLAG)
			print_mark(e->mark);
		putchar('\n');
	}
	free(e);
	if (fflush(stdout))
		return err("stdout: %s", strerror(errno));
	return r < 0 ? -1 : 0;
}

static int do_find(struct log *log, const char *mark)
{
	struct entry *e = malloc(sizeof(*e));
	int r;

	if (!e)
		return err("out of memory");
	while (!(r = log_next(log, e))) {
		if ((e->flags & LOG_MARK_FLAG) && !strcmp(e->mark, mark)) {
			printf("%" PRIu64 "\n", e->index);
			free(e);
			return 0;
		}
	}
	free(e);
	if (r < 0)
		return -1;
	return err("%s: no entry carries the mark '%s'", log->path, mark);
}

/* Zeroes over [off, off + len) of the target. */
static int zero_range(int fd, const char *path, int is_reg, uint64_t size,
		      uint64_t off, uint64_t len, char *zeroes)
{
	uint64_t in = 0, n;

	/* A hole reads as zeroes and takes no memory on tmpfs. */
	if (is_reg && off < size) {
		in = size - off < len ? size - off : len;
		if (!fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       (off_t)off, (off_t)in)) {
			off += in;
			len -= in;
		} else if (errno != EOPNOTSUPP && errno != ENOSYS) {
			return err("%s: punching a hole at byte %" PRIu64 ": %s",
				   path, off, strerror(errno));
		}
	}
	memset(zeroes, 0, CHUNK);
	for (; len; off += n, len -= n) {
		n = len < CHUNK ? len : CHUNK;
		if (write_at(fd, path, zeroes, n, off))
			return -1;
	}
	return 0;
}

static int do_replay(struct log *log, const char *target, const char *count_s)
{
	uint64_t count, size, off, len, n, writes = 0, discards = 0, bytes = 0;
	struct entry *e = malloc(sizeof(*e));
	char *buf = malloc(CHUNK), *end;
	int fd, is_reg, r = 0;

	if (!e || !buf)
		return err("out of memory");
	errno = 0;
	count = strtoull(count_s, &end, 10);
	if (errno || *count_s < '0' || *count_s > '9' || *end)
		return err("COUNT '%s' is not a number of entries", count_s);
	if (count > log->nr_entries)
		return err("%s: COUNT %" PRIu64 " but the log has only %" PRIu64
			   " entries", log->path, count, log->nr_entries);
	fd = open(target, O_RDWR);
	if (fd < 0)
		return err("%s: %s", target, strerror(errno));
	if (fd_size(fd, target, &size, &is_reg))
		return -1;
	while (log->index < count && !(r = log_next(log, e))) {
		if (!e->nr_sectors)
			continue;	/* a mark or a flush without data */
		off = e->sector * log->ss;
		len = e->nr_sectors * log->ss;
		if ((!is_reg || size) && (off > size || len > size - off))
			return err("entry %" PRIu64 ": bytes %" PRIu64 "..%" PRIu64
				   " are past the end of %s (%" PRIu64 " bytes)",
				   e->index, off, off + len - 1, target, size);
		if (e->flags & LOG_DISCARD_FLAG) {
			if (zero_range(fd, target, is_reg, size, off, len, buf))
				return -1;
			discards++;
			continue;
		}
		for (; len; off += n, len -= n) {
			n = len < CHUNK ? len : CHUNK;
			if (read_at(log->fd, log->path, buf, n,
				    e->data_pos + (off - e->sector * log->ss)) ||
			    write_at(fd, target, buf, n, off))
				return -1;
		}
		writes++;
		bytes += e->nr_sectors * log->ss;
	}
	if (r)
		return -1;
	if (fsync(fd) || close(fd))
		return err("%s: fsync: %s", target, strerror(errno));
	printf("replayed %" PRIu64 " entries: %" PRIu64 " writes (%" PRIu64
	       " KiB), %" PRIu64 " discards\n", count, writes, bytes >> 10,
	       discards);
	free(buf);
	free(e);
	return 0;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: replaylog list LOG\n"
		"       replaylog replay LOG TARGET COUNT\n"
		"       replaylog find LOG MARK\n");
	return 1;
}

int main(int argc, char **argv)
{
	struct log log;
	int r;

	if (argc < 3)
		return usage();
	if (!(!strcmp(argv[1], "list") && argc == 3) &&
	    !(!strcmp(argv[1], "replay") && argc == 5) &&
	    !(!strcmp(argv[1], "find") && argc == 4))
		return usage();
	if (log_open(&log, argv[2]))
		return 1;
	if (!strcmp(argv[1], "list"))
		r = do_list(&log);
	else if (!strcmp(argv[1], "replay"))
		r = do_replay(&log, argv[3], argv[4]);
	else
		r = do_find(&log, argv[3]);
	free(log.hdr);
	close(log.fd);
	return r ? 1 : 0;
}
