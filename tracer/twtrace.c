/*
 * tracewatt PMPI tracer: LD_PRELOAD it into any MPI program (C, C++, Fortran via the mpif.h /
 * `use mpi` bindings) to record every wrapped MPI call with wall-clock and CPU start and end
 * into tracewatt's native trace format (docs/native-trace-format.md), one file per rank.
 *
 *   TRACEWATT_TRACE_DIR=out LD_PRELOAD=libtwtrace.so mpirun -np 4 ./app
 *
 * Design: one buffered writer per process (1 MiB buffer, written as 64 KiB blocks, each with
 * its CRC-32, when full and at MPI_Finalize); records are varint-encoded so a call costs four clock_gettime() and a few
 * dozen bytes of memcpy. CPU time is the calling thread's (CLOCK_THREAD_CPUTIME_ID): the
 * thread making MPI calls computes between them, and other threads (the MPI library's
 * progress threads) do not count. Handles are recorded as the application sees them (request pointers
 * / Fortran integers); communicators and groups get small per-rank ids (world 0, self 1).
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "funcs.h"

#define TW_VERSION 4
#define TW_BLOCK 65536u
#define TW_FLAG_TIMED 1
#define TW_TAG_CPU 0x40
#define TW_COMM_NULL 0xFFFFFFFFu

enum {
    R_LOCAL = 0, R_UNSUPPORTED = 1, R_INIT = 3, R_FINALIZE = 4, R_SEND = 5, R_RECV = 6,
    R_ISEND = 7, R_IRECV = 8, R_SENDRECV = 9, R_WAIT = 10, R_WAITALL = 11, R_WAITANY = 12,
    R_WAITSOME = 13, R_TEST = 14, R_TESTALL = 15, R_TESTANY = 16, R_TESTSOME = 17,
    R_REQUEST_FREE = 18, R_COLL = 19, R_VCOLL = 20, R_COMM_SPLIT = 21, R_COMM_FREE = 22,
    R_COMM_GROUP = 23, R_GROUP_SELECT = 24, R_GROUP_FREE = 25, R_COMM_CREATE = 26,
    R_CANCEL = 28, R_CANCEL_OUTCOME = 29, R_END = 0xFF
};
enum { C_BARRIER, C_BCAST, C_REDUCE, C_ALLREDUCE, C_ALLGATHER, C_ALLTOALL, C_GATHER, C_SCATTER,
       C_REDUCE_SCATTER, C_SCAN, C_EXSCAN };
enum { V_ALLTOALLV, V_ALLGATHERV, V_GATHERV, V_SCATTERV, V_REDUCE_SCATTER };

/* ---------------------------------------------------------------- writer */

static FILE *tw_file;
static unsigned char *tw_buf;
static size_t tw_len;
static size_t tw_cap = 1 << 20;
static uint64_t tw_prev_end, tw_prev_cpu_end, tw_count;
/* Record CPU times (TRACEWATT_CPU_TIME=0 turns it off: the CPU clock is a system call, not a
 * vDSO read, and costs about a microsecond per call on the cheapest calls). */
static int tw_cpu = 1;

/* One call's start and end on the wall clock (t) and the thread's CPU clock (c), ns. */
typedef struct { uint64_t t0, t1, c0, c1; } tw_span;
static int tw_active;

static uint64_t clock_ns(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CRC-32 (ISO-HDLC, zlib's), chainable as zlib's crc32(): crc32_update(crc32_update(0, a), b). */
static uint32_t crc_table[256];
static uint32_t crc32_update(uint32_t c, const unsigned char *p, size_t n) {
    if (!crc_table[1])
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t k = i;
            for (int j = 0; j < 8; j++) k = (k & 1) ? (k >> 1) ^ 0xEDB88320u : k >> 1;
            crc_table[i] = k;
        }
    c = ~c;
    while (n--) c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
    return ~c;
}
static void le32(unsigned char *b, uint32_t v) {
    b[0] = (unsigned char)v; b[1] = (unsigned char)(v >> 8);
    b[2] = (unsigned char)(v >> 16); b[3] = (unsigned char)(v >> 24);
}

/* One block: its length, payload and the CRC-32 of both. */
static void put_block(const unsigned char *p, uint32_t n) {
    unsigned char len[4], crc[4];
    le32(len, n);
    le32(crc, crc32_update(crc32_update(0, len, 4), p, n));
    fwrite(len, 1, 4, tw_file);
    fwrite(p, 1, n, tw_file);
    fwrite(crc, 1, 4, tw_file);
}

/* Writes the buffer's full blocks (and with `all` its last, shorter one); keeps the rest. */
static void flush_buf(int all) {
    size_t off = 0;
    while (tw_file && (tw_len - off >= TW_BLOCK || (all && off < tw_len))) {
        size_t n = tw_len - off < TW_BLOCK ? tw_len - off : TW_BLOCK;
        put_block(tw_buf + off, (uint32_t)n);
        off += n;
    }
    memmove(tw_buf, tw_buf + off, tw_len - off);
    tw_len -= off;
}

/* Every record is far below 64 KiB except vectors, which reserve per element. */
static void reserve(size_t n) {
    if (tw_len + n <= tw_cap) return;
    flush_buf(0);
    if (tw_len + n > tw_cap) { /* a huge vector: grow */
        tw_cap = tw_len + n;
        tw_buf = realloc(tw_buf, tw_cap);
    }
}
static void put8(unsigned v) { tw_buf[tw_len++] = (unsigned char)v; }
static void putv(uint64_t v) {
    while (v >= 0x80) { tw_buf[tw_len++] = (unsigned char)(v | 0x80); v >>= 7; }
    tw_buf[tw_len++] = (unsigned char)v;
}
static void putz(int64_t v) { putv(((uint64_t)v << 1) ^ (uint64_t)(v >> 63)); }

/* Starts a record: tag, function id, wall and CPU times. Reserves `extra` payload bytes. */
static void begin(unsigned tag, unsigned func, tw_span sp, size_t extra) {
    reserve(64 + extra);
    put8(tw_cpu ? tag | TW_TAG_CPU : tag);
    putv(func);
    putz((int64_t)(sp.t0 - tw_prev_end));
    putz((int64_t)(sp.t1 - sp.t0));
    tw_prev_end = sp.t1;
    if (tw_cpu) {
        putz((int64_t)(sp.c0 - tw_prev_cpu_end));
        putz((int64_t)(sp.c1 - sp.c0));
        tw_prev_cpu_end = sp.c1;
    }
    tw_count++;
}

/* ---------------------------------------------------------------- handles */

typedef struct { MPI_Comm c; uint32_t id; } comm_entry;
static comm_entry *comms;
static size_t ncomms, capcomms;
static uint32_t next_comm_id = 2;

static uint32_t comm_id(MPI_Comm c) {
    if (c == MPI_COMM_WORLD) return 0;
    if (c == MPI_COMM_SELF) return 1;
    if (c == MPI_COMM_NULL) return TW_COMM_NULL;
    for (size_t i = 0; i < ncomms; i++)
        if (comms[i].c == c) return comms[i].id;
    return TW_COMM_NULL - 1; /* unknown (created by an unwrapped call) */
}
static uint32_t comm_new(MPI_Comm c) {
    if (c == MPI_COMM_NULL) return TW_COMM_NULL;
    if (ncomms == capcomms) {
        capcomms = capcomms ? 2 * capcomms : 16;
        comms = realloc(comms, capcomms * sizeof *comms);
    }
    comms[ncomms].c = c;
    comms[ncomms].id = next_comm_id++;
    return comms[ncomms++].id;
}
static void comm_forget(MPI_Comm c) {
    for (size_t i = 0; i < ncomms; i++)
        if (comms[i].c == c) { comms[i] = comms[--ncomms]; return; }
}

typedef struct { MPI_Group g; uint32_t id; } group_entry;
static group_entry *groups;
static size_t ngroups, capgroups;
static uint32_t next_group_id = 1;
static uint32_t group_id(MPI_Group g) {
    for (size_t i = 0; i < ngroups; i++)
        if (groups[i].g == g) return groups[i].id;
    return 0;
}
static uint32_t group_new(MPI_Group g) {
    if (ngroups == capgroups) {
        capgroups = capgroups ? 2 * capgroups : 16;
        groups = realloc(groups, capgroups * sizeof *groups);
    }
    groups[ngroups].g = g;
    groups[ngroups].id = next_group_id++;
    return groups[ngroups++].id;
}
static void group_forget(MPI_Group g) {
    for (size_t i = 0; i < ngroups; i++)
        if (groups[i].g == g) { groups[i] = groups[--ngroups]; return; }
}

static uint64_t req_id(MPI_Request r) { return (uint64_t)(uintptr_t)r; }

static uint64_t tbytes(int count, MPI_Datatype t) {
    int s = 0;
    if (count <= 0 || t == MPI_DATATYPE_NULL) return 0;
    PMPI_Type_size(t, &s);
    return (uint64_t)count * (uint64_t)(s > 0 ? s : 0);
}
static int64_t peer(int p) {
    if (p == MPI_ANY_SOURCE) return -1;
    if (p == MPI_PROC_NULL) return -2;
    return p;
}
static int64_t tagv(int t) { return t == MPI_ANY_TAG ? -1 : t; }
static int comm_size(MPI_Comm c) { int n = 0; PMPI_Comm_size(c, &n); return n; }
static int comm_rank(MPI_Comm c) { int r = 0; PMPI_Comm_rank(c, &r); return r; }

/* ---------------------------------------------------------------- setup */

static void tw_open(void) {
    int rank = 0, size = 1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *cpu = getenv("TRACEWATT_CPU_TIME");
    tw_cpu = !(cpu && strcmp(cpu, "0") == 0);
    const char *dir = getenv("TRACEWATT_TRACE_DIR");
    if (!dir || !*dir) dir = "tracewatt-trace";
    mkdir(dir, 0777);
    char path[4096];
    if (rank == 0) {
        snprintf(path, sizeof path, "%s/trace.twi", dir);
        FILE *f = fopen(path, "wb");
        if (f) {
            unsigned char h[20] = {'T', 'W', 'T', 'R', 'I', 'D', 'X', 0, TW_VERSION, 0, 0, 0};
            le32(h + 12, (uint32_t)size);
            le32(h + 16, crc32_update(0, h, 16));
            fwrite(h, 1, 20, f);
            fclose(f);
        }
    }
    snprintf(path, sizeof path, "%s/rank-%d.twr", dir, rank);
    tw_file = fopen(path, "wb");
    if (!tw_file) {
        fprintf(stderr, "tracewatt tracer: cannot write %s; not tracing rank %d\n", path, rank);
        return;
    }
    tw_buf = malloc(tw_cap);
    unsigned char h[16] = {'T', 'W', 'T', 'R', 'A', 'C', 'E', 0, TW_VERSION, 0, TW_FLAG_TIMED, 0,
                           (unsigned char)rank, (unsigned char)(rank >> 8),
                           (unsigned char)(rank >> 16), (unsigned char)(rank >> 24)};
    fwrite(h, 1, 16, tw_file);
    tw_active = 1;
}

static void tw_close(void) {
    if (!tw_active) return;
    reserve(16);
    put8(R_END);
    putv(tw_count);
    flush_buf(1);
    fclose(tw_file);
    tw_file = NULL;
    tw_active = 0;
}

/* The wall clock outside the CPU clock, so a call's wall span holds its CPU span. */
#define T0                                                                                    \
    tw_span sp;                                                                               \
    sp.t0 = clock_ns(CLOCK_REALTIME);                                                         \
    sp.c0 = tw_cpu ? clock_ns(CLOCK_THREAD_CPUTIME_ID) : 0
#define T1                                                                                    \
    sp.c1 = tw_cpu ? clock_ns(CLOCK_THREAD_CPUTIME_ID) : 0;                                   \
    sp.t1 = clock_ns(CLOCK_REALTIME)

/* ---------------------------------------------------------------- init / finalize */

int MPI_Init(int *argc, char ***argv) {
    T0;
    int rc = PMPI_Init(argc, argv);
    T1;
    tw_open();
    if (tw_active) begin(R_INIT, TW_F_INIT, sp, 0);
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    T0;
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    T1;
    tw_open();
    if (tw_active) begin(R_INIT, TW_F_INIT_THREAD, sp, 0);
    return rc;
}

int MPI_Finalize(void) {
    T0;
    /* Barrier-free: the record's end is taken before the library tears down. */
    int rc = PMPI_Finalize();
    T1;
    if (tw_active) begin(R_FINALIZE, TW_F_FINALIZE, sp, 0);
    tw_close();
    return rc;
}

/* ---------------------------------------------------------------- point to point */

static void rec_p2p(unsigned tag, unsigned func, tw_span sp, MPI_Comm comm,
                    int p, int t, uint64_t bytes, int has_req, MPI_Request req) {
    if (!tw_active) return;
    begin(tag, func, sp, 48);
    putv(comm_id(comm));
    putz(tag == R_RECV || tag == R_IRECV ? peer(p) : (p == MPI_PROC_NULL ? -2 : p));
    putz(tagv(t));
    putv(bytes);
    if (has_req) putv(req_id(req));
}

#define SEND_LIKE(NAME, FUNC)                                                                 \
    int NAME(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) { \
        T0;                                                                                   \
        int rc = P##NAME(buf, count, dt, dest, tag, comm);                                    \
        T1;                                                                                   \
        rec_p2p(R_SEND, FUNC, sp, comm, dest, tag, tbytes(count, dt), 0, MPI_REQUEST_NULL);   \
        return rc;                                                                            \
    }
SEND_LIKE(MPI_Send, TW_F_SEND)
SEND_LIKE(MPI_Bsend, TW_F_BSEND)
SEND_LIKE(MPI_Ssend, TW_F_SSEND)
SEND_LIKE(MPI_Rsend, TW_F_RSEND)

#define ISEND_LIKE(NAME, FUNC)                                                                \
    int NAME(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,   \
             MPI_Request *req) {                                                              \
        T0;                                                                                   \
        int rc = P##NAME(buf, count, dt, dest, tag, comm, req);                               \
        T1;                                                                                   \
        rec_p2p(R_ISEND, FUNC, sp, comm, dest, tag, tbytes(count, dt), 1, *req);              \
        return rc;                                                                            \
    }
ISEND_LIKE(MPI_Isend, TW_F_ISEND)
ISEND_LIKE(MPI_Ibsend, TW_F_IBSEND)
ISEND_LIKE(MPI_Issend, TW_F_ISSEND)
ISEND_LIKE(MPI_Irsend, TW_F_IRSEND)

int MPI_Recv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
             MPI_Status *st) {
    T0;
    int rc = PMPI_Recv(buf, count, dt, src, tag, comm, st);
    T1;
    rec_p2p(R_RECV, TW_F_RECV, sp, comm, src, tag, tbytes(count, dt), 0, MPI_REQUEST_NULL);
    return rc;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
              MPI_Request *req) {
    T0;
    int rc = PMPI_Irecv(buf, count, dt, src, tag, comm, req);
    T1;
    rec_p2p(R_IRECV, TW_F_IRECV, sp, comm, src, tag, tbytes(count, dt), 1, *req);
    return rc;
}

static void rec_sendrecv(unsigned func, tw_span sp, MPI_Comm comm, int dst,
                         int stag, uint64_t sb, int src, int rtag, uint64_t rb) {
    if (!tw_active) return;
    begin(R_SENDRECV, func, sp, 64);
    putv(comm_id(comm));
    putz(dst == MPI_PROC_NULL ? -2 : dst);
    putz(stag);
    putv(sb);
    putz(peer(src));
    putz(tagv(rtag));
    putv(rb);
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dst, int stag, void *rbuf,
                 int rcount, MPI_Datatype rtype, int src, int rtag, MPI_Comm comm,
                 MPI_Status *st) {
    T0;
    int rc = PMPI_Sendrecv(sbuf, scount, stype, dst, stag, rbuf, rcount, rtype, src, rtag, comm, st);
    T1;
    rec_sendrecv(TW_F_SENDRECV, sp, comm, dst, stag, tbytes(scount, stype), src, rtag,
                 tbytes(rcount, rtype));
    return rc;
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype dt, int dst, int stag, int src,
                         int rtag, MPI_Comm comm, MPI_Status *st) {
    T0;
    int rc = PMPI_Sendrecv_replace(buf, count, dt, dst, stag, src, rtag, comm, st);
    T1;
    uint64_t b = tbytes(count, dt);
    rec_sendrecv(TW_F_SENDRECV_REPLACE, sp, comm, dst, stag, b, src, rtag, b);
    return rc;
}

/* ---------------------------------------------------------------- cancellation
 *
 * Whether MPI_Cancel took effect is known only from the status that completes the request
 * (MPI_Test_cancelled), so the completion wrappers look at the statuses of the requests
 * cancelled so far (their own storage when the application passes MPI_STATUS(ES)_IGNORE) and
 * write a cancel_outcome record right after the completing call's record. Only requests in
 * this list cost anything.
 */

static uint64_t *cancels;
static size_t ncancels, capcancels;

static int cancel_pending(uint64_t id) {
    for (size_t i = 0; i < ncancels; i++)
        if (cancels[i] == id) return 1;
    return 0;
}
static void cancel_forget(uint64_t id) {
    for (size_t i = 0; i < ncancels; i++)
        if (cancels[i] == id) { cancels[i] = cancels[--ncancels]; return; }
}
/* Whether any of the n requests has a cancel pending. */
static int any_cancel(int n, const uint64_t *ids) {
    for (int i = 0; ncancels && i < n; i++)
        if (cancel_pending(ids[i])) return 1;
    return 0;
}

/* Records a cancel of request `id` and remembers the request until it completes. */
static void cancel_note(uint64_t id, tw_span sp) {
    if (ncancels == capcancels) {
        capcancels = capcancels ? 2 * capcancels : 16;
        cancels = realloc(cancels, capcancels * sizeof *cancels);
    }
    if (!cancel_pending(id)) cancels[ncancels++] = id;
    if (tw_active) { begin(R_CANCEL, TW_F_CANCEL, sp, 10); putv(id); }
}

int MPI_Cancel(MPI_Request *req) {
    uint64_t id = req_id(*req);
    T0; int rc = PMPI_Cancel(req); T1;
    cancel_note(id, sp);
    return rc;
}

/* After a call completed request `id` with status `st`: its cancel's outcome, if it had one,
 * as a record of no duration at the call's end. */
static void cancel_outcome(uint64_t id, MPI_Status *st, tw_span sp) {
    if (!cancel_pending(id)) return;
    cancel_forget(id);
    int cancelled = 0;
    PMPI_Test_cancelled(st, &cancelled);
    if (!tw_active) return;
    tw_span at = {sp.t1, sp.t1, sp.c1, sp.c1};
    begin(R_CANCEL_OUTCOME, TW_F_CANCEL_OUTCOME, at, 12);
    put8(1);
    putv(id);
    put8(cancelled ? 1 : 0);
}

/* The statuses a completion call fills: the application's, or `own` (n of them, allocated if
 * more than one) when it ignores them and a cancel is pending among the requests. */
static MPI_Status *statuses(int watch, MPI_Status *app, int n, MPI_Status *own) {
    if (!watch || (app != MPI_STATUS_IGNORE && app != MPI_STATUSES_IGNORE)) return app;
    return n <= 1 ? own : malloc(sizeof(MPI_Status) * (size_t)n);
}
static void free_statuses(MPI_Status *s, MPI_Status *app, MPI_Status *own) {
    if (s != app && s != own) free(s);
}

/* ---------------------------------------------------------------- completion */

static void put_reqs(int n, const uint64_t *ids) {
    reserve(16 + 10 * (size_t)(n > 0 ? n : 0));
    putv((uint64_t)(n > 0 ? n : 0));
    for (int i = 0; i < n; i++) putv(ids[i]);
}

/* Copies request values before the call: completion overwrites them with MPI_REQUEST_NULL. */
static uint64_t *save_reqs(int n, const MPI_Request *r, uint64_t *small) {
    uint64_t *ids = n <= 16 ? small : malloc(sizeof(uint64_t) * (size_t)n);
    for (int i = 0; i < n; i++) ids[i] = req_id(r[i]);
    return ids;
}

int MPI_Wait(MPI_Request *req, MPI_Status *st) {
    uint64_t id = req_id(*req);
    MPI_Status own, *s = statuses(ncancels && cancel_pending(id), st, 1, &own);
    T0;
    int rc = PMPI_Wait(req, s);
    T1;
    if (tw_active) { begin(R_WAIT, TW_F_WAIT, sp, 10); putv(id); }
    if (ncancels) cancel_outcome(id, s, sp);
    return rc;
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *st) {
    uint64_t id = req_id(*req);
    MPI_Status own, *s = statuses(ncancels && cancel_pending(id), st, 1, &own);
    T0;
    int rc = PMPI_Test(req, flag, s);
    T1;
    if (tw_active) { begin(R_TEST, TW_F_TEST, sp, 11); putv(id); put8(*flag ? 1 : 0); }
    if (*flag && ncancels) cancel_outcome(id, s, sp);
    return rc;
}

/* Outcomes of the cancelled requests among ids[i] for the k completed indices `idx` (NULL:
 * all n, statuses in request order). */
static void cancel_outcomes(int n, const uint64_t *ids, int k, const int *idx, MPI_Status *s,
                            tw_span sp) {
    for (int j = 0; ncancels && j < (idx ? k : n); j++) {
        int i = idx ? idx[j] : j;
        if (i >= 0 && i < n) cancel_outcome(ids[i], &s[j], sp);
    }
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status sts[]) {
    uint64_t small[16], *ids = save_reqs(n, reqs, small);
    MPI_Status own, *s = statuses(any_cancel(n, ids), sts, n, &own);
    T0;
    int rc = PMPI_Waitall(n, reqs, s);
    T1;
    if (tw_active) { begin(R_WAITALL, TW_F_WAITALL, sp, 0); put_reqs(n, ids); }
    if (s != MPI_STATUSES_IGNORE) cancel_outcomes(n, ids, n, NULL, s, sp);
    free_statuses(s, sts, &own);
    if (ids != small) free(ids);
    return rc;
}

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status sts[]) {
    uint64_t small[16], *ids = save_reqs(n, reqs, small);
    MPI_Status own, *s = statuses(any_cancel(n, ids), sts, n, &own);
    T0;
    int rc = PMPI_Testall(n, reqs, flag, s);
    T1;
    if (tw_active) {
        begin(R_TESTALL, TW_F_TESTALL, sp, 0);
        put_reqs(n, ids);
        reserve(1);
        put8(*flag ? 1 : 0);
    }
    if (*flag && s != MPI_STATUSES_IGNORE) cancel_outcomes(n, ids, n, NULL, s, sp);
    free_statuses(s, sts, &own);
    if (ids != small) free(ids);
    return rc;
}

int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *st) {
    uint64_t small[16], *ids = save_reqs(n, reqs, small);
    MPI_Status own, *s = statuses(any_cancel(n, ids), st, 1, &own);
    T0;
    int rc = PMPI_Waitany(n, reqs, index, s);
    T1;
    if (tw_active) {
        begin(R_WAITANY, TW_F_WAITANY, sp, 0);
        put_reqs(n, ids);
        reserve(10);
        putz(*index == MPI_UNDEFINED ? -1 : *index);
    }
    if (s != MPI_STATUS_IGNORE) cancel_outcomes(n, ids, 1, index, s, sp);
    if (ids != small) free(ids);
    return rc;
}

int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *st) {
    uint64_t small[16], *ids = save_reqs(n, reqs, small);
    MPI_Status own, *s = statuses(any_cancel(n, ids), st, 1, &own);
    T0;
    int rc = PMPI_Testany(n, reqs, index, flag, s);
    T1;
    if (tw_active) {
        begin(R_TESTANY, TW_F_TESTANY, sp, 0);
        put_reqs(n, ids);
        reserve(11);
        putz(*index == MPI_UNDEFINED ? -1 : *index);
        put8(*flag ? 1 : 0);
    }
    if (*flag && s != MPI_STATUS_IGNORE) cancel_outcomes(n, ids, 1, index, s, sp);
    if (ids != small) free(ids);
    return rc;
}

static int some(int is_test, int n, MPI_Request reqs[], int *outcount, int idx[],
                MPI_Status sts[]) {
    uint64_t small[16], *ids = save_reqs(n, reqs, small);
    MPI_Status own, *s = statuses(any_cancel(n, ids), sts, n, &own);
    T0;
    int rc = is_test ? PMPI_Testsome(n, reqs, outcount, idx, s)
                     : PMPI_Waitsome(n, reqs, outcount, idx, s);
    T1;
    int k = *outcount == MPI_UNDEFINED ? 0 : *outcount;
    if (tw_active) {
        begin(is_test ? R_TESTSOME : R_WAITSOME, is_test ? TW_F_TESTSOME : TW_F_WAITSOME, sp, 0);
        put_reqs(n, ids);
        reserve(10 + 10 * (size_t)k);
        putv((uint64_t)k);
        for (int i = 0; i < k; i++) putz(idx[i]);
    }
    if (s != MPI_STATUSES_IGNORE) cancel_outcomes(n, ids, k, idx, s, sp);
    free_statuses(s, sts, &own);
    if (ids != small) free(ids);
    return rc;
}
int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int idx[], MPI_Status sts[]) {
    return some(0, n, reqs, outcount, idx, sts);
}
int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int idx[], MPI_Status sts[]) {
    return some(1, n, reqs, outcount, idx, sts);
}

int MPI_Request_free(MPI_Request *req) {
    uint64_t id = req_id(*req);
    cancel_forget(id); /* freed: its outcome is never known */
    T0;
    int rc = PMPI_Request_free(req);
    T1;
    if (tw_active) { begin(R_REQUEST_FREE, TW_F_REQUEST_FREE, sp, 10); putv(id); }
    return rc;
}

/* ---------------------------------------------------------------- collectives */

static void rec_coll(unsigned func, tw_span sp, MPI_Comm comm, unsigned kind,
                     int root, uint64_t bytes) {
    if (!tw_active) return;
    begin(R_COLL, func, sp, 32);
    putv(comm_id(comm));
    put8(kind);
    putz(root);
    putv(bytes);
}

int MPI_Barrier(MPI_Comm comm) {
    T0;
    int rc = PMPI_Barrier(comm);
    T1;
    rec_coll(TW_F_BARRIER, sp, comm, C_BARRIER, 0, 0);
    return rc;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm) {
    T0;
    int rc = PMPI_Bcast(buf, count, dt, root, comm);
    T1;
    rec_coll(TW_F_BCAST, sp, comm, C_BCAST, root, tbytes(count, dt));
    return rc;
}

int MPI_Reduce(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, int root,
               MPI_Comm comm) {
    T0;
    int rc = PMPI_Reduce(s, r, count, dt, op, root, comm);
    T1;
    rec_coll(TW_F_REDUCE, sp, comm, C_REDUCE, root, tbytes(count, dt));
    return rc;
}

int MPI_Allreduce(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    T0;
    int rc = PMPI_Allreduce(s, r, count, dt, op, comm);
    T1;
    rec_coll(TW_F_ALLREDUCE, sp, comm, C_ALLREDUCE, 0, tbytes(count, dt));
    return rc;
}

int MPI_Scan(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    T0;
    int rc = PMPI_Scan(s, r, count, dt, op, comm);
    T1;
    rec_coll(TW_F_SCAN, sp, comm, C_SCAN, 0, tbytes(count, dt));
    return rc;
}

int MPI_Exscan(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm) {
    T0;
    int rc = PMPI_Exscan(s, r, count, dt, op, comm);
    T1;
    rec_coll(TW_F_EXSCAN, sp, comm, C_EXSCAN, 0, tbytes(count, dt));
    return rc;
}

/* With MPI_IN_PLACE the send type is meaningless: the block is the receive count/type. */
#define BLOCK(S, SC, ST, RC, RT) ((S) == MPI_IN_PLACE ? tbytes(RC, RT) : tbytes(SC, ST))

int MPI_Allgather(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt,
                  MPI_Comm comm) {
    T0;
    int rc = PMPI_Allgather(s, sc, st, r, rc_, rt, comm);
    T1;
    rec_coll(TW_F_ALLGATHER, sp, comm, C_ALLGATHER, 0, BLOCK(s, sc, st, rc_, rt));
    return rc;
}

int MPI_Alltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt,
                 MPI_Comm comm) {
    T0;
    int rc = PMPI_Alltoall(s, sc, st, r, rc_, rt, comm);
    T1;
    rec_coll(TW_F_ALLTOALL, sp, comm, C_ALLTOALL, 0, BLOCK(s, sc, st, rc_, rt));
    return rc;
}

int MPI_Gather(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt,
               int root, MPI_Comm comm) {
    T0;
    int rc = PMPI_Gather(s, sc, st, r, rc_, rt, root, comm);
    T1;
    rec_coll(TW_F_GATHER, sp, comm, C_GATHER, root, BLOCK(s, sc, st, rc_, rt));
    return rc;
}

int MPI_Scatter(const void *s, int sc, MPI_Datatype st, void *r, int rc_, MPI_Datatype rt,
                int root, MPI_Comm comm) {
    T0;
    int rc = PMPI_Scatter(s, sc, st, r, rc_, rt, root, comm);
    T1;
    uint64_t b = r == MPI_IN_PLACE ? tbytes(sc, st) : tbytes(rc_, rt);
    rec_coll(TW_F_SCATTER, sp, comm, C_SCATTER, root, b);
    return rc;
}

int MPI_Reduce_scatter_block(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op,
                             MPI_Comm comm) {
    T0;
    int rc = PMPI_Reduce_scatter_block(s, r, count, dt, op, comm);
    T1;
    rec_coll(TW_F_REDUCE_SCATTER_BLOCK, sp, comm, C_REDUCE_SCATTER, 0, tbytes(count, dt));
    return rc;
}

static void put_sizes(int n, const int *counts, MPI_Datatype t) {
    reserve(10 + 10 * (size_t)(n > 0 ? n : 0));
    if (!counts) { putv(0); return; }
    putv((uint64_t)n);
    for (int i = 0; i < n; i++) putv(tbytes(counts[i], t));
}
static void put_one(uint64_t b) { reserve(20); putv(1); putv(b); }
static void vhead(unsigned func, tw_span sp, MPI_Comm comm, unsigned vk, int root) {
    begin(R_VCOLL, func, sp, 32);
    putv(comm_id(comm));
    put8(vk);
    putz(root);
}

int MPI_Alltoallv(const void *s, const int sc[], const int sd[], MPI_Datatype st, void *r,
                  const int rc_[], const int rd[], MPI_Datatype rt, MPI_Comm comm) {
    T0;
    int rc = PMPI_Alltoallv(s, sc, sd, st, r, rc_, rd, rt, comm);
    T1;
    if (tw_active) {
        int n = comm_size(comm);
        vhead(TW_F_ALLTOALLV, sp, comm, V_ALLTOALLV, 0);
        if (s == MPI_IN_PLACE) put_sizes(n, rc_, rt); else put_sizes(n, sc, st);
        put_sizes(n, rc_, rt);
    }
    return rc;
}

int MPI_Allgatherv(const void *s, int sc, MPI_Datatype st, void *r, const int rc_[],
                   const int rd[], MPI_Datatype rt, MPI_Comm comm) {
    T0;
    int rc = PMPI_Allgatherv(s, sc, st, r, rc_, rd, rt, comm);
    T1;
    if (tw_active) {
        int n = comm_size(comm), me = comm_rank(comm);
        vhead(TW_F_ALLGATHERV, sp, comm, V_ALLGATHERV, 0);
        put_one(s == MPI_IN_PLACE ? tbytes(rc_[me], rt) : tbytes(sc, st));
        put_sizes(n, rc_, rt);
    }
    return rc;
}

int MPI_Gatherv(const void *s, int sc, MPI_Datatype st, void *r, const int rc_[], const int rd[],
                MPI_Datatype rt, int root, MPI_Comm comm) {
    T0;
    int rc = PMPI_Gatherv(s, sc, st, r, rc_, rd, rt, root, comm);
    T1;
    if (tw_active) {
        int n = comm_size(comm), me = comm_rank(comm);
        vhead(TW_F_GATHERV, sp, comm, V_GATHERV, root);
        put_one(s == MPI_IN_PLACE ? tbytes(rc_[me], rt) : tbytes(sc, st));
        if (me == root) put_sizes(n, rc_, rt); else put_sizes(0, NULL, rt);
    }
    return rc;
}

int MPI_Scatterv(const void *s, const int sc[], const int sd[], MPI_Datatype st, void *r, int rc_,
                 MPI_Datatype rt, int root, MPI_Comm comm) {
    T0;
    int rc = PMPI_Scatterv(s, sc, sd, st, r, rc_, rt, root, comm);
    T1;
    if (tw_active) {
        int n = comm_size(comm), me = comm_rank(comm);
        vhead(TW_F_SCATTERV, sp, comm, V_SCATTERV, root);
        if (me == root) put_sizes(n, sc, st); else put_sizes(0, NULL, st);
        put_one(r == MPI_IN_PLACE ? tbytes(sc[me], st) : tbytes(rc_, rt));
    }
    return rc;
}

int MPI_Reduce_scatter(const void *s, void *r, const int rc_[], MPI_Datatype dt, MPI_Op op,
                       MPI_Comm comm) {
    T0;
    int rc = PMPI_Reduce_scatter(s, r, rc_, dt, op, comm);
    T1;
    if (tw_active) {
        int n = comm_size(comm);
        vhead(TW_F_REDUCE_SCATTER, sp, comm, V_REDUCE_SCATTER, 0);
        put_sizes(n, rc_, dt);
        put_sizes(n, rc_, dt);
    }
    return rc;
}

/* ---------------------------------------------------------------- communicators and groups */

static void rec_split(unsigned func, tw_span sp, MPI_Comm parent, int color,
                      int key, MPI_Comm newc) {
    if (!tw_active) return;
    begin(R_COMM_SPLIT, func, sp, 40);
    putv(comm_id(parent));
    putz(color == MPI_UNDEFINED ? -1 : color);
    putz(key);
    putv(comm_new(newc));
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newc) {
    T0;
    int rc = PMPI_Comm_split(comm, color, key, newc);
    T1;
    rec_split(TW_F_COMM_SPLIT, sp, comm, color, key, *newc);
    return rc;
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newc) {
    T0;
    int rc = PMPI_Comm_dup(comm, newc);
    T1;
    rec_split(TW_F_COMM_DUP, sp, comm, 0, 0, *newc);
    return rc;
}

int MPI_Comm_free(MPI_Comm *comm) {
    uint32_t id = comm_id(*comm);
    MPI_Comm c = *comm;
    T0;
    int rc = PMPI_Comm_free(comm);
    T1;
    if (tw_active) { begin(R_COMM_FREE, TW_F_COMM_FREE, sp, 10); putv(id); }
    comm_forget(c);
    return rc;
}

int MPI_Comm_group(MPI_Comm comm, MPI_Group *g) {
    T0;
    int rc = PMPI_Comm_group(comm, g);
    T1;
    if (tw_active) {
        begin(R_COMM_GROUP, TW_F_COMM_GROUP, sp, 20);
        putv(comm_id(comm));
        putv(group_new(*g));
    }
    return rc;
}

static int group_select(int excl, MPI_Group g, int n, const int ranks[], MPI_Group *out) {
    T0;
    int rc = excl ? PMPI_Group_excl(g, n, ranks, out) : PMPI_Group_incl(g, n, ranks, out);
    T1;
    if (tw_active) {
        begin(R_GROUP_SELECT, excl ? TW_F_GROUP_EXCL : TW_F_GROUP_INCL, sp, 0);
        reserve(32 + 10 * (size_t)(n > 0 ? n : 0));
        putv(group_id(g));
        putv((uint64_t)(n > 0 ? n : 0));
        for (int i = 0; i < n; i++) putz(ranks[i]);
        put8(excl);
        putv(group_new(*out));
    }
    return rc;
}
int MPI_Group_incl(MPI_Group g, int n, const int ranks[], MPI_Group *out) {
    return group_select(0, g, n, ranks, out);
}
int MPI_Group_excl(MPI_Group g, int n, const int ranks[], MPI_Group *out) {
    return group_select(1, g, n, ranks, out);
}

int MPI_Group_free(MPI_Group *g) {
    uint32_t id = group_id(*g);
    MPI_Group old = *g;
    T0;
    int rc = PMPI_Group_free(g);
    T1;
    if (tw_active) { begin(R_GROUP_FREE, TW_F_GROUP_FREE, sp, 10); putv(id); }
    group_forget(old);
    return rc;
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group g, MPI_Comm *newc) {
    T0;
    int rc = PMPI_Comm_create(comm, g, newc);
    T1;
    if (tw_active) {
        begin(R_COMM_CREATE, TW_F_COMM_CREATE, sp, 32);
        putv(comm_id(comm));
        putv(group_id(g));
        putv(comm_new(*newc));
    }
    return rc;
}

/* ---------------------------------------------------------------- local and unsupported */

static void rec_local(unsigned func, tw_span sp) {
    if (tw_active) begin(R_LOCAL, func, sp, 0);
}
int MPI_Comm_rank(MPI_Comm comm, int *r) {
    T0; int rc = PMPI_Comm_rank(comm, r); T1;
    rec_local(TW_F_COMM_RANK, sp);
    return rc;
}
int MPI_Comm_size(MPI_Comm comm, int *n) {
    T0; int rc = PMPI_Comm_size(comm, n); T1;
    rec_local(TW_F_COMM_SIZE, sp);
    return rc;
}
int MPI_Probe(int src, int tag, MPI_Comm comm, MPI_Status *st) {
    T0; int rc = PMPI_Probe(src, tag, comm, st); T1;
    rec_local(TW_F_PROBE, sp);
    return rc;
}
int MPI_Iprobe(int src, int tag, MPI_Comm comm, int *flag, MPI_Status *st) {
    T0; int rc = PMPI_Iprobe(src, tag, comm, flag, st); T1;
    rec_local(TW_F_IPROBE, sp);
    return rc;
}
/* A marker a program may call around its timed region ([jobs.trace.window] from / to). The
 * level is all that is passed on: MPI defines no other arguments. */
int MPI_Pcontrol(const int level, ...) {
    T0; int rc = PMPI_Pcontrol(level); T1;
    rec_local(TW_F_PCONTROL, sp);
    return rc;
}

static void rec_unsupported(unsigned func, const char *name, tw_span sp) {
    if (!tw_active) return;
    size_t n = strlen(name);
    begin(R_UNSUPPORTED, func, sp, 10 + n);
    putv(n);
    memcpy(tw_buf + tw_len, name, n);
    tw_len += n;
}
int MPI_Start(MPI_Request *req) {
    T0; int rc = PMPI_Start(req); T1;
    rec_unsupported(TW_F_START, "start", sp);
    return rc;
}
int MPI_Startall(int n, MPI_Request reqs[]) {
    T0; int rc = PMPI_Startall(n, reqs); T1;
    rec_unsupported(TW_F_STARTALL, "startall", sp);
    return rc;
}

/* ---------------------------------------------------------------- Fortran (mpif.h / use mpi)
 *
 * Open MPI's Fortran bindings call the C PMPI_* functions, so the C wrappers above never see
 * Fortran calls. These wrappers take the Fortran symbols (all common manglings), call the
 * library's own PMPI Fortran entry point, and record from the converted handles.
 */

extern void pmpi_init_(MPI_Fint *ierr);
extern void pmpi_finalize_(MPI_Fint *ierr);
extern void pmpi_send_(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *dest, MPI_Fint *tag,
                       MPI_Fint *comm, MPI_Fint *ierr);
extern void pmpi_recv_(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *src, MPI_Fint *tag,
                       MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr);
extern void pmpi_isend_(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *dest, MPI_Fint *tag,
                        MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr);
extern void pmpi_irecv_(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *src, MPI_Fint *tag,
                        MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr);
extern void pmpi_wait_(MPI_Fint *req, MPI_Fint *status, MPI_Fint *ierr);
extern void pmpi_cancel_(MPI_Fint *req, MPI_Fint *ierr);
extern void pmpi_scan_(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op,
                       MPI_Fint *comm, MPI_Fint *ierr);
extern void pmpi_exscan_(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op,
                         MPI_Fint *comm, MPI_Fint *ierr);
extern void pmpi_waitall_(MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *statuses, MPI_Fint *ierr);
extern void pmpi_barrier_(MPI_Fint *comm, MPI_Fint *ierr);
extern void pmpi_bcast_(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root, MPI_Fint *comm,
                        MPI_Fint *ierr);
extern void pmpi_reduce_(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op,
                         MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr);
extern void pmpi_allreduce_(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op,
                            MPI_Fint *comm, MPI_Fint *ierr);
extern void pmpi_alltoall_(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc,
                           MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *ierr);
extern void pmpi_allgather_(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc,
                            MPI_Fint *rt, MPI_Fint *comm, MPI_Fint *ierr);
extern void pmpi_comm_split_(MPI_Fint *comm, MPI_Fint *color, MPI_Fint *key, MPI_Fint *newc,
                             MPI_Fint *ierr);

#define FC(x) PMPI_Comm_f2c(*(x))
#define FT(x) PMPI_Type_f2c(*(x))

#define FORTRAN_ALIASES(name, args, call)                                  \
    void name##__ args { name##_ call; }                                   \
    void name args { name##_ call; }

void mpi_init_(MPI_Fint *ierr) {
    T0;
    pmpi_init_(ierr);
    T1;
    tw_open();
    if (tw_active) begin(R_INIT, TW_F_INIT, sp, 0);
}
FORTRAN_ALIASES(mpi_init, (MPI_Fint *ierr), (ierr))

void mpi_finalize_(MPI_Fint *ierr) {
    T0;
    pmpi_finalize_(ierr);
    T1;
    if (tw_active) begin(R_FINALIZE, TW_F_FINALIZE, sp, 0);
    tw_close();
}
FORTRAN_ALIASES(mpi_finalize, (MPI_Fint *ierr), (ierr))

void mpi_send_(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *dest, MPI_Fint *tag,
               MPI_Fint *comm, MPI_Fint *ierr) {
    T0;
    pmpi_send_(buf, count, dt, dest, tag, comm, ierr);
    T1;
    rec_p2p(R_SEND, TW_F_SEND, sp, FC(comm), *dest, *tag, tbytes(*count, FT(dt)), 0,
            MPI_REQUEST_NULL);
}
FORTRAN_ALIASES(mpi_send,
                (void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *dest, MPI_Fint *tag,
                 MPI_Fint *comm, MPI_Fint *ierr),
                (buf, count, dt, dest, tag, comm, ierr))

void mpi_recv_(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *src, MPI_Fint *tag,
               MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr) {
    T0;
    pmpi_recv_(buf, count, dt, src, tag, comm, status, ierr);
    T1;
    rec_p2p(R_RECV, TW_F_RECV, sp, FC(comm), *src, *tag, tbytes(*count, FT(dt)), 0,
            MPI_REQUEST_NULL);
}
FORTRAN_ALIASES(mpi_recv,
                (void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *src, MPI_Fint *tag,
                 MPI_Fint *comm, MPI_Fint *status, MPI_Fint *ierr),
                (buf, count, dt, src, tag, comm, status, ierr))

/* Fortran request handles are recorded as their integer values (+1, so 0 is never used). */
#define FREQ(x) ((MPI_Request)(uintptr_t)((uint64_t)(uint32_t)(x) + 1))

void mpi_isend_(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *dest, MPI_Fint *tag,
                MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr) {
    T0;
    pmpi_isend_(buf, count, dt, dest, tag, comm, req, ierr);
    T1;
    rec_p2p(R_ISEND, TW_F_ISEND, sp, FC(comm), *dest, *tag, tbytes(*count, FT(dt)), 1,
            FREQ(*req));
}
FORTRAN_ALIASES(mpi_isend,
                (void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *dest, MPI_Fint *tag,
                 MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr),
                (buf, count, dt, dest, tag, comm, req, ierr))

void mpi_irecv_(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *src, MPI_Fint *tag,
                MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr) {
    T0;
    pmpi_irecv_(buf, count, dt, src, tag, comm, req, ierr);
    T1;
    rec_p2p(R_IRECV, TW_F_IRECV, sp, FC(comm), *src, *tag, tbytes(*count, FT(dt)), 1,
            FREQ(*req));
}
FORTRAN_ALIASES(mpi_irecv,
                (void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *src, MPI_Fint *tag,
                 MPI_Fint *comm, MPI_Fint *req, MPI_Fint *ierr),
                (buf, count, dt, src, tag, comm, req, ierr))

/* A Fortran status is MPI_STATUS_SIZE integers: the C status's (Open MPI and MPICH alike). */
#define F_STATUS_SIZE (sizeof(MPI_Status) / sizeof(MPI_Fint))

/* The outcome of a cancelled request from its Fortran status (see cancel_outcome). */
static void cancel_outcome_f(uint64_t id, MPI_Fint *fst, tw_span sp) {
    MPI_Status st;
    if (!cancel_pending(id)) return;
    PMPI_Status_f2c(fst, &st);
    cancel_outcome(id, &st, sp);
}

void mpi_cancel_(MPI_Fint *req, MPI_Fint *ierr) {
    uint64_t id = req_id(FREQ(*req));
    T0;
    pmpi_cancel_(req, ierr);
    T1;
    cancel_note(id, sp);
}
FORTRAN_ALIASES(mpi_cancel, (MPI_Fint *req, MPI_Fint *ierr), (req, ierr))

void mpi_wait_(MPI_Fint *req, MPI_Fint *status, MPI_Fint *ierr) {
    uint64_t id = req_id(FREQ(*req));
    MPI_Fint own[16];
    int watch = ncancels && cancel_pending(id);
    MPI_Fint *s = watch && status == MPI_F_STATUS_IGNORE ? own : status;
    T0;
    pmpi_wait_(req, s, ierr);
    T1;
    if (tw_active) { begin(R_WAIT, TW_F_WAIT, sp, 10); putv(id); }
    if (watch) cancel_outcome_f(id, s, sp);
}
FORTRAN_ALIASES(mpi_wait, (MPI_Fint *req, MPI_Fint *status, MPI_Fint *ierr), (req, status, ierr))

void mpi_waitall_(MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *statuses, MPI_Fint *ierr) {
    int k = *n > 0 ? *n : 0;
    uint64_t small[16], *ids = k <= 16 ? small : malloc(sizeof(uint64_t) * (size_t)k);
    for (int i = 0; i < k; i++) ids[i] = req_id(FREQ(reqs[i]));
    int watch = any_cancel(k, ids);
    MPI_Fint *s = watch && statuses == MPI_F_STATUSES_IGNORE
                      ? malloc(sizeof(MPI_Fint) * F_STATUS_SIZE * (size_t)(k ? k : 1))
                      : statuses;
    T0;
    pmpi_waitall_(n, reqs, s, ierr);
    T1;
    if (tw_active) { begin(R_WAITALL, TW_F_WAITALL, sp, 0); put_reqs(k, ids); }
    for (int i = 0; watch && i < k; i++) cancel_outcome_f(ids[i], s + i * F_STATUS_SIZE, sp);
    if (s != statuses) free(s);
    if (ids != small) free(ids);
}
FORTRAN_ALIASES(mpi_waitall, (MPI_Fint *n, MPI_Fint *reqs, MPI_Fint *statuses, MPI_Fint *ierr),
                (n, reqs, statuses, ierr))

/* Fortran's MPI_PCONTROL(LEVEL) has no IERROR argument. */
extern void pmpi_pcontrol_(MPI_Fint *level);
void mpi_pcontrol_(MPI_Fint *level) {
    T0;
    pmpi_pcontrol_(level);
    T1;
    rec_local(TW_F_PCONTROL, sp);
}
FORTRAN_ALIASES(mpi_pcontrol, (MPI_Fint *level), (level))

void mpi_barrier_(MPI_Fint *comm, MPI_Fint *ierr) {
    T0;
    pmpi_barrier_(comm, ierr);
    T1;
    rec_coll(TW_F_BARRIER, sp, FC(comm), C_BARRIER, 0, 0);
}
FORTRAN_ALIASES(mpi_barrier, (MPI_Fint *comm, MPI_Fint *ierr), (comm, ierr))

void mpi_bcast_(void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root, MPI_Fint *comm,
                MPI_Fint *ierr) {
    T0;
    pmpi_bcast_(buf, count, dt, root, comm, ierr);
    T1;
    rec_coll(TW_F_BCAST, sp, FC(comm), C_BCAST, *root, tbytes(*count, FT(dt)));
}
FORTRAN_ALIASES(mpi_bcast,
                (void *buf, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *root, MPI_Fint *comm,
                 MPI_Fint *ierr),
                (buf, count, dt, root, comm, ierr))

void mpi_reduce_(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *root,
                 MPI_Fint *comm, MPI_Fint *ierr) {
    T0;
    pmpi_reduce_(s, r, count, dt, op, root, comm, ierr);
    T1;
    rec_coll(TW_F_REDUCE, sp, FC(comm), C_REDUCE, *root, tbytes(*count, FT(dt)));
}
FORTRAN_ALIASES(mpi_reduce,
                (void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *root,
                 MPI_Fint *comm, MPI_Fint *ierr),
                (s, r, count, dt, op, root, comm, ierr))

void mpi_allreduce_(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op,
                    MPI_Fint *comm, MPI_Fint *ierr) {
    T0;
    pmpi_allreduce_(s, r, count, dt, op, comm, ierr);
    T1;
    rec_coll(TW_F_ALLREDUCE, sp, FC(comm), C_ALLREDUCE, 0, tbytes(*count, FT(dt)));
}
FORTRAN_ALIASES(mpi_allreduce,
                (void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm,
                 MPI_Fint *ierr),
                (s, r, count, dt, op, comm, ierr))

void mpi_alltoall_(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt,
                   MPI_Fint *comm, MPI_Fint *ierr) {
    T0;
    pmpi_alltoall_(s, sc, st, r, rc, rt, comm, ierr);
    T1;
    rec_coll(TW_F_ALLTOALL, sp, FC(comm), C_ALLTOALL, 0, tbytes(*rc, FT(rt)));
}
FORTRAN_ALIASES(mpi_alltoall,
                (void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt,
                 MPI_Fint *comm, MPI_Fint *ierr),
                (s, sc, st, r, rc, rt, comm, ierr))

void mpi_allgather_(void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt,
                    MPI_Fint *comm, MPI_Fint *ierr) {
    T0;
    pmpi_allgather_(s, sc, st, r, rc, rt, comm, ierr);
    T1;
    rec_coll(TW_F_ALLGATHER, sp, FC(comm), C_ALLGATHER, 0, tbytes(*rc, FT(rt)));
}
FORTRAN_ALIASES(mpi_allgather,
                (void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc, MPI_Fint *rt,
                 MPI_Fint *comm, MPI_Fint *ierr),
                (s, sc, st, r, rc, rt, comm, ierr))

void mpi_scan_(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm,
               MPI_Fint *ierr) {
    T0;
    pmpi_scan_(s, r, count, dt, op, comm, ierr);
    T1;
    rec_coll(TW_F_SCAN, sp, FC(comm), C_SCAN, 0, tbytes(*count, FT(dt)));
}
FORTRAN_ALIASES(mpi_scan,
                (void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm,
                 MPI_Fint *ierr),
                (s, r, count, dt, op, comm, ierr))

void mpi_exscan_(void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op,
                 MPI_Fint *comm, MPI_Fint *ierr) {
    T0;
    pmpi_exscan_(s, r, count, dt, op, comm, ierr);
    T1;
    rec_coll(TW_F_EXSCAN, sp, FC(comm), C_EXSCAN, 0, tbytes(*count, FT(dt)));
}
FORTRAN_ALIASES(mpi_exscan,
                (void *s, void *r, MPI_Fint *count, MPI_Fint *dt, MPI_Fint *op, MPI_Fint *comm,
                 MPI_Fint *ierr),
                (s, r, count, dt, op, comm, ierr))

void mpi_comm_split_(MPI_Fint *comm, MPI_Fint *color, MPI_Fint *key, MPI_Fint *newc,
                     MPI_Fint *ierr) {
    T0;
    pmpi_comm_split_(comm, color, key, newc, ierr);
    T1;
    rec_split(TW_F_COMM_SPLIT, sp, FC(comm), *color, *key, FC(newc));
}
FORTRAN_ALIASES(mpi_comm_split,
                (MPI_Fint *comm, MPI_Fint *color, MPI_Fint *key, MPI_Fint *newc, MPI_Fint *ierr),
                (comm, color, key, newc, ierr))
