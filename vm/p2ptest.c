/*
 * p2ptest: exercise the Linux kernel's P2PDMA path from user space, inside the
 * peerpath test VM (built static, runs from the initramfs). It asks the kernel
 * directly, without any peerpath code, so its results are the kernel's own
 * answer that peerpath's verdicts are compared with.
 *
 *   p2ptest probe    ALLOC DEV [BYTES]      O_DIRECT read DEV -> P2P memory, then O_DIRECT
 *                                           write P2P memory -> DEV (same offset, same data)
 *   p2ptest copy     ALLOC SRC DST [BYTES]  fill SRC with a fresh pattern (host buffer,
 *                                           O_DIRECT), SRC -> P2P -> DST (O_DIRECT), read DST
 *                                           back into host memory and compare
 *   p2ptest buffered ALLOC DEV [BYTES]      buffered (no O_DIRECT) read DEV -> P2P memory
 *   p2ptest toolarge ALLOC                  mmap more than p2pmem/available (expect ENOMEM)
 *   p2ptest private  ALLOC                  MAP_PRIVATE mapping (expect EINVAL)
 *
 * ALLOC is /sys/bus/pci/devices/<BDF>/p2pmem/allocate. Each mmap() of it is a
 * new allocation from the provider's pool. Output: one JSON object per line.
 * Exit status: 0 when every step succeeded, 1 when a step failed (the JSON
 * says which and why), 2 on a usage error.
 *
 * Timings are printed only as "elapsed_s" with the label
 * "VM (QEMU TCG): function, not speed": QEMU bounces peer DMA through buffers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LABEL "VM (QEMU TCG): function, not speed"
#define DEFAULT_BYTES (1u << 20)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *errname(int e)
{
    switch (e) {
    case 0: return "";
    case EREMOTEIO: return "EREMOTEIO";
    case ENOMEM: return "ENOMEM";
    case EINVAL: return "EINVAL";
    case EFAULT: return "EFAULT";
    case EIO: return "EIO";
    case ENODEV: return "ENODEV";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EACCES: return "EACCES";
    case ENOENT: return "ENOENT";
    default: return "other";
    }
}

/* One step's result as a JSON object (no trailing newline). */
static void step_json(char *out, size_t n, const char *what, ssize_t got, size_t want, int err, double secs)
{
    snprintf(out, n,
             "{\"op\":\"%s\",\"ok\":%s,\"bytes\":%zd,\"wanted\":%zu,\"errno\":%d,\"errno_name\":\"%s\","
             "\"error\":\"%s\",\"elapsed_s\":%.6f}",
             what, (err == 0 && got == (ssize_t)want) ? "true" : "false", got, want, err, errname(err),
             err ? strerror(err) : (got == (ssize_t)want ? "" : "short transfer"), secs);
}

/* Full-length pread/pwrite; returns bytes done, sets *err on failure. */
static ssize_t xfer(int fd, void *buf, size_t len, off_t off, int write, int *err)
{
    size_t done = 0;
    *err = 0;
    while (done < len) {
        ssize_t r = write ? pwrite(fd, (char *)buf + done, len - done, off + done)
                          : pread(fd, (char *)buf + done, len - done, off + done);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            *err = errno;
            return done;
        }
        if (r == 0)
            break;
        done += r;
    }
    return done;
}

static void *p2p_map(const char *alloc, size_t len, int flags, int *err)
{
    int fd = open(alloc, O_RDWR);
    if (fd < 0) {
        *err = errno;
        return NULL;
    }
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, fd, 0);
    *err = p == MAP_FAILED ? errno : 0;
    close(fd); /* the mapping keeps the allocation; close() frees nothing */
    return p == MAP_FAILED ? NULL : p;
}

static long long read_available(const char *alloc)
{
    char path[4096], buf[64];
    snprintf(path, sizeof path, "%s", alloc);
    char *slash = strrchr(path, '/');
    if (!slash)
        return -1;
    snprintf(slash + 1, sizeof path - (slash + 1 - path), "available");
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long long v = -1;
    if (fgets(buf, sizeof buf, f))
        v = atoll(buf);
    fclose(f);
    return v;
}

static void fill_pattern(uint64_t *p, size_t len, uint64_t seed)
{
    uint64_t x = seed | 1;
    for (size_t i = 0; i < len / 8; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = x ^ i;
    }
}

static int usage(void)
{
    fprintf(stderr, "usage: p2ptest probe|copy|buffered|toolarge|private ALLOC [DEV [DEV2]] [BYTES]\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return usage();
    const char *cmd = argv[1], *alloc = argv[2];
    char s1[512], s2[512], s3[512], s4[512];
    int err = 0;

    if (!strcmp(cmd, "toolarge") || !strcmp(cmd, "private")) {
        long long avail = read_available(alloc);
        size_t len;
        int flags = MAP_SHARED;
        if (!strcmp(cmd, "toolarge")) {
            /* More than is free, rounded to 2 MiB: the pool cannot satisfy it. */
            len = (size_t)((avail < 0 ? 0 : avail) + (2 << 20)) & ~((size_t)(2 << 20) - 1);
        } else {
            len = 1 << 20;
            flags = MAP_PRIVATE;
        }
        void *p = p2p_map(alloc, len, flags, &err);
        printf("{\"test\":\"%s\",\"alloc\":\"%s\",\"available\":%lld,\"bytes\":%zu,\"mapped\":%s,"
               "\"errno\":%d,\"errno_name\":\"%s\",\"error\":\"%s\",\"figures\":\"" LABEL "\"}\n",
               cmd, alloc, avail, len, p ? "true" : "false", err, errname(err), err ? strerror(err) : "");
        if (p)
            munmap(p, len);
        /* Success of this test means the kernel refused. */
        return p ? 1 : 0;
    }

    if (!strcmp(cmd, "probe") || !strcmp(cmd, "buffered")) {
        if (argc < 4)
            return usage();
        const char *dev = argv[3];
        size_t len = argc > 4 ? strtoull(argv[4], NULL, 0) : DEFAULT_BYTES;
        int direct = !strcmp(cmd, "probe");
        void *p = p2p_map(alloc, len, MAP_SHARED, &err);
        if (!p) {
            printf("{\"test\":\"%s\",\"alloc\":\"%s\",\"dev\":\"%s\",\"ok\":false,\"stage\":\"mmap\",\"errno\":%d,"
                   "\"errno_name\":\"%s\",\"error\":\"%s\"}\n",
                   cmd, alloc, dev, err, errname(err), strerror(err));
            return 1;
        }
        int fd = open(dev, O_RDWR | (direct ? O_DIRECT : 0));
        if (fd < 0) {
            err = errno;
            printf("{\"test\":\"%s\",\"alloc\":\"%s\",\"dev\":\"%s\",\"ok\":false,\"stage\":\"open\",\"errno\":%d,"
                   "\"errno_name\":\"%s\",\"error\":\"%s\"}\n",
                   cmd, alloc, dev, err, errname(err), strerror(err));
            return 1;
        }
        double t = now();
        ssize_t r = xfer(fd, p, len, 0, 0, &err);
        step_json(s1, sizeof s1, direct ? "read_direct_into_p2p" : "read_buffered_into_p2p", r, len, err, now() - t);
        int ok = err == 0 && (size_t)r == len;
        s2[0] = 0;
        if (direct) {
            /* The other direction: the device reads the P2P memory. Written back to the same
             * place, so the device's contents are unchanged when the read succeeded. */
            t = now();
            ssize_t w = xfer(fd, p, len, 0, 1, &err);
            step_json(s2, sizeof s2, "write_direct_from_p2p", w, len, err, now() - t);
            ok = ok && err == 0 && (size_t)w == len;
        }
        close(fd);
        munmap(p, len);
        printf("{\"test\":\"%s\",\"alloc\":\"%s\",\"dev\":\"%s\",\"ok\":%s,\"steps\":[%s%s%s],\"figures\":\"" LABEL "\"}\n",
               cmd, alloc, dev, ok ? "true" : "false", s1, s2[0] ? "," : "", s2);
        return ok ? 0 : 1;
    }

    if (!strcmp(cmd, "copy")) {
        if (argc < 5)
            return usage();
        const char *src = argv[3], *dst = argv[4];
        size_t len = argc > 5 ? strtoull(argv[5], NULL, 0) : DEFAULT_BYTES;
        void *host = NULL, *back = NULL;
        if (posix_memalign(&host, 4096, len) || posix_memalign(&back, 4096, len)) {
            fprintf(stderr, "p2ptest: out of memory\n");
            return 1;
        }
        uint64_t seed = (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid();
        fill_pattern(host, len, seed);
        memset(back, 0, len);
        int fs = open(src, O_RDWR | O_DIRECT), fd = open(dst, O_RDWR | O_DIRECT);
        if (fs < 0 || fd < 0) {
            err = errno;
            printf("{\"test\":\"copy\",\"ok\":false,\"stage\":\"open\",\"errno\":%d,\"error\":\"%s\"}\n", err, strerror(err));
            return 1;
        }
        void *p = p2p_map(alloc, len, MAP_SHARED, &err);
        if (!p) {
            printf("{\"test\":\"copy\",\"ok\":false,\"stage\":\"mmap\",\"errno\":%d,\"errno_name\":\"%s\",\"error\":\"%s\"}\n",
                   err, errname(err), strerror(err));
            return 1;
        }
        double t = now();
        ssize_t r = xfer(fs, host, len, 0, 1, &err);
        step_json(s1, sizeof s1, "seed_src_from_host", r, len, err, now() - t);
        int ok = err == 0 && (size_t)r == len;
        t = now();
        r = xfer(fs, p, len, 0, 0, &err);
        step_json(s2, sizeof s2, "read_src_into_p2p", r, len, err, now() - t);
        ok = ok && err == 0 && (size_t)r == len;
        t = now();
        r = xfer(fd, p, len, 0, 1, &err);
        step_json(s3, sizeof s3, "write_p2p_to_dst", r, len, err, now() - t);
        ok = ok && err == 0 && (size_t)r == len;
        t = now();
        r = xfer(fd, back, len, 0, 0, &err);
        step_json(s4, sizeof s4, "read_dst_into_host", r, len, err, now() - t);
        ok = ok && err == 0 && (size_t)r == len;
        int match = memcmp(host, back, len) == 0;
        /* Where the first difference is, for a report that says more than "mismatch". */
        long long first_diff = -1;
        if (!match)
            for (size_t i = 0; i < len; i++)
                if (((unsigned char *)host)[i] != ((unsigned char *)back)[i]) {
                    first_diff = (long long)i;
                    break;
                }
        printf("{\"test\":\"copy\",\"alloc\":\"%s\",\"src\":\"%s\",\"dst\":\"%s\",\"bytes\":%zu,\"ok\":%s,"
               "\"data_matches\":%s,\"first_difference\":%lld,\"steps\":[%s,%s,%s,%s],\"figures\":\"" LABEL "\"}\n",
               alloc, src, dst, len, ok && match ? "true" : "false", match ? "true" : "false", first_diff,
               s1, s2, s3, s4);
        munmap(p, len);
        close(fs);
        close(fd);
        return ok && match ? 0 : 1;
    }
    return usage();
}
