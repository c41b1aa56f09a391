// harness.c: the cpu backend's runner. It is compiled once per verifier
// and run as a child process per candidate:
//
//   harness JOB STATE OUT REF.so CAND.so REF_SYM CAND_SYM
//
// It limits itself (address space, CPU time, core dumps, file size), loads
// the reference and the candidate with RTLD_LOCAL so neither can see the
// other, and for every trial runs both on private copies of the trial's
// inputs, reference and candidate interleaved (order alternating per
// trial), each call preceded by a cache flush and output poisoning and timed
// with CLOCK_MONOTONIC. STATE is a small shared file recording which side is
// running (so a crash can be blamed on the right code) and whether an
// allocation failed (memory-hungry candidates); the candidate's malloc family
// is routed here through -Wl,--wrap at its link.
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define JOB_MAGIC 0x314a4f4243555243ULL /* "CRUCBOJ1" little-endian */
#define OUT_MAGIC 0x3154554f43555243ULL /* "CRUCOUT1" */

enum { ROLE_IN = 0, ROLE_OUT = 1, ROLE_SCALAR = 2 };
enum { FLAG_THREAD_LEAK = 1, FLAG_REPS_DIFFER = 2, FLAG_INPUT_WRITTEN = 4, FLAG_REF_REPS_DIFFER = 8 };

static volatile char *state; /* [0] phase: '-', 'r', 'c', 'w'; [1] 'M' after a failed allocation */
static char dummy_state[8] = "--";

void *__wrap_malloc(size_t n) {
	void *p = malloc(n);
	if (!p && n) state[1] = 'M';
	return p;
}
void *__wrap_calloc(size_t a, size_t b) {
	void *p = calloc(a, b);
	if (!p && a && b) state[1] = 'M';
	return p;
}
void *__wrap_realloc(void *q, size_t n) {
	void *p = realloc(q, n);
	if (!p && n) state[1] = 'M';
	return p;
}

typedef struct {
	uint32_t role;
	uint64_t bytes;
	int64_t scalar;
	uint8_t poison;
} arg_t;

static void die(int code, const char *what, const char *detail) {
	fprintf(stderr, "harness: %s: %s\n", what, detail ? detail : "");
	fflush(stderr);
	_exit(code);
}

static void *xmalloc(size_t n) {
	void *p = malloc(n ? n : 1);
	if (!p) die(5, "out of memory", "harness buffers");
	return p;
}

static void readn(FILE *f, void *dst, size_t n) {
	if (n && fread(dst, 1, n, f) != n) die(2, "short job file", NULL);
}

static double now_ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int count_threads(void) {
	DIR *d = opendir("/proc/self/task");
	if (!d) return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') n++;
	closedir(d);
	return n;
}

static uint64_t count_byte(const unsigned char *b, unsigned char v, uint64_t n) {
	uint64_t c = 0;
	for (uint64_t i = 0; i < n; i++) c += b[i] == v;
	return c;
}

static void call(void *f, const uint64_t *a, int n) {
	switch (n) {
	case 0: ((void (*)(void))f)(); break;
	case 1: ((void (*)(uint64_t))f)(a[0]); break;
	case 2: ((void (*)(uint64_t, uint64_t))f)(a[0], a[1]); break;
	case 3: ((void (*)(uint64_t, uint64_t, uint64_t))f)(a[0], a[1], a[2]); break;
	case 4: ((void (*)(uint64_t, uint64_t, uint64_t, uint64_t))f)(a[0], a[1], a[2], a[3]); break;
	case 5: ((void (*)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t))f)(a[0], a[1], a[2], a[3], a[4]); break;
	case 6: ((void (*)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t))f)(a[0], a[1], a[2], a[3], a[4], a[5]); break;
	case 7: ((void (*)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6]); break;
	case 8: ((void (*)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]); break;
	case 9: ((void (*)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]); break;
	case 10: ((void (*)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]); break;
	case 11: ((void (*)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]); break;
	case 12: ((void (*)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11]); break;
	case 13: ((void (*)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12]); break;
	case 14: ((void (*)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13]); break;
	case 15: ((void (*)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14]); break;
	case 16: ((void (*)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t))f)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15]); break;
	default: die(2, "too many arguments", NULL);
	}
}

static volatile uint64_t flush_sink;
static unsigned char *flush_buf;
static uint64_t flush_bytes;
static void flush_cache(int salt) {
	if (!flush_bytes) return;
	memset(flush_buf, salt, flush_bytes);
	uint64_t s = 0;
	for (uint64_t i = 0; i < flush_bytes; i += 64) s += flush_buf[i];
	flush_sink += s;
}

int main(int argc, char **argv) {
	if (argc != 8) die(2, "usage", "harness JOB STATE OUT REF.so CAND.so REF_SYM CAND_SYM");
	state = (volatile char *)dummy_state;
	int sfd = open(argv[2], O_RDWR);
	if (sfd >= 0) {
		void *m = mmap(NULL, 8, PROT_READ | PROT_WRITE, MAP_SHARED, sfd, 0);
		if (m != MAP_FAILED) state = m;
	}
	state[0] = '-';
	FILE *jf = fopen(argv[1], "rb");
	if (!jf) die(2, "open job", argv[1]);
	uint64_t magic, nonce, mem_limit;
	uint32_t trials, warmup, reps, nargs, cpu_s, pad;
	readn(jf, &magic, 8);
	if (magic != JOB_MAGIC) die(2, "bad job magic", NULL);
	readn(jf, &nonce, 8);
	readn(jf, &trials, 4);
	readn(jf, &warmup, 4);
	readn(jf, &reps, 4);
	readn(jf, &nargs, 4);
	readn(jf, &flush_bytes, 8);
	readn(jf, &mem_limit, 8);
	readn(jf, &cpu_s, 4);
	readn(jf, &pad, 4);
	if (nargs > 16 || trials == 0 || reps == 0) die(2, "bad job header", NULL);
	arg_t args[16];
	for (uint32_t i = 0; i < nargs; i++) {
		uint64_t pad8;
		readn(jf, &args[i].role, 4);
		readn(jf, &pad, 4);
		readn(jf, &args[i].bytes, 8);
		readn(jf, &args[i].scalar, 8);
		readn(jf, &pad8, 8);
		args[i].poison = (uint8_t)pad8;
	}
	/* Pristine inputs of every trial. */
	unsigned char **pristine = xmalloc(sizeof(void *) * trials * nargs);
	for (uint32_t t = 0; t < trials; t++)
		for (uint32_t i = 0; i < nargs; i++) {
			pristine[t * nargs + i] = NULL;
			if (args[i].role == ROLE_IN) {
				pristine[t * nargs + i] = xmalloc(args[i].bytes);
				readn(jf, pristine[t * nargs + i], args[i].bytes);
			}
		}
	fclose(jf);

	/* Working buffers per side, result copies, timings. */
	unsigned char *buf[2][16], *first[2][16];
	for (int s = 0; s < 2; s++)
		for (uint32_t i = 0; i < nargs; i++) {
			buf[s][i] = args[i].role == ROLE_SCALAR ? NULL : xmalloc(args[i].bytes);
			first[s][i] = args[i].role == ROLE_OUT ? xmalloc(args[i].bytes) : NULL;
		}
	flush_buf = flush_bytes ? xmalloc(flush_bytes) : NULL;
	FILE *of = fopen(argv[3], "wb");
	if (!of) die(2, "open out", argv[3]);

	/* Limits apply from here on: buffers are allocated, the code is not yet loaded. */
	struct rlimit rl = {0, 0};
	setrlimit(RLIMIT_CORE, &rl);
	if (mem_limit) {
		rl.rlim_cur = rl.rlim_max = mem_limit;
		setrlimit(RLIMIT_AS, &rl);
	}
	if (cpu_s) {
		rl.rlim_cur = cpu_s;
		rl.rlim_max = cpu_s + 1;
		setrlimit(RLIMIT_CPU, &rl);
	}
	rl.rlim_cur = rl.rlim_max = 256u << 20;
	setrlimit(RLIMIT_FSIZE, &rl);

	void *h[2], *fn[2];
	const char *lib[2] = {argv[4], argv[5]}, *sym[2] = {argv[6], argv[7]};
	for (int s = 0; s < 2; s++) {
		state[0] = s ? 'c' : 'r';
		h[s] = dlopen(lib[s], RTLD_NOW | RTLD_LOCAL);
		if (!h[s]) die(s ? 3 : 4, "load", dlerror());
		fn[s] = dlsym(h[s], sym[s]);
		if (!fn[s]) die(s ? 3 : 4, "missing entry symbol", sym[s]);
		state[0] = '-';
	}

	magic = OUT_MAGIC;
	fwrite(&magic, 8, 1, of);
	fwrite(&nonce, 8, 1, of);

	uint64_t a[16];
	/* Trial -1 is warm-up on trial 0's inputs: untimed, unchecked. */
	for (int t = -1; t < (int)trials; t++) {
		uint32_t tt = t < 0 ? 0 : (uint32_t)t;
		uint32_t flags = 0;
		double *tm[2];
		tm[0] = xmalloc(sizeof(double) * reps);
		tm[1] = xmalloc(sizeof(double) * reps);
		for (int k = 0; k < 2; k++) {
			int s = (t & 1) ? 1 - k : k; /* alternate which side goes first */
			uint32_t nrep = t < 0 ? warmup : reps;
			for (uint32_t r = 0; r < nrep; r++) {
				for (uint32_t i = 0; i < nargs; i++) {
					if (args[i].role == ROLE_IN) memcpy(buf[s][i], pristine[tt * nargs + i], args[i].bytes);
					if (args[i].role == ROLE_OUT) memset(buf[s][i], args[i].poison, args[i].bytes);
					a[i] = args[i].role == ROLE_SCALAR ? (uint64_t)args[i].scalar : (uint64_t)(uintptr_t)buf[s][i];
				}
				flush_cache((int)r + t);
				int before = count_threads();
				state[0] = s ? 'c' : 'r';
				double t0 = now_ms();
				call(fn[s], a, (int)nargs);
				double t1 = now_ms();
				state[0] = '-';
				if (t < 0) continue;
				tm[s][r] = t1 - t0;
				if (s == 1 && count_threads() > before) flags |= FLAG_THREAD_LEAK;
				for (uint32_t i = 0; i < nargs; i++) {
					if (args[i].role == ROLE_OUT) {
						if (r == 0)
							memcpy(first[s][i], buf[s][i], args[i].bytes);
						else if (memcmp(first[s][i], buf[s][i], args[i].bytes) != 0) {
							/* Different bits on identical inputs: a parallel reduction may
							 * legitimately do that; more never-written bytes than the
							 * first repetition means work was skipped. */
							if (count_byte(buf[s][i], args[i].poison, args[i].bytes) >
							    count_byte(first[s][i], args[i].poison, args[i].bytes))
								flags |= s ? FLAG_REPS_DIFFER : FLAG_REF_REPS_DIFFER;
						}
					}
					if (s == 1 && args[i].role == ROLE_IN &&
					    memcmp(buf[s][i], pristine[tt * nargs + i], args[i].bytes) != 0)
						flags |= FLAG_INPUT_WRITTEN;
				}
			}
		}
		if (t >= 0) {
			for (uint32_t i = 0; i < nargs; i++)
				if (args[i].role == ROLE_OUT) {
					fwrite(first[0][i], 1, args[i].bytes, of);
					fwrite(first[1][i], 1, args[i].bytes, of);
				}
			fwrite(tm[0], sizeof(double), reps, of);
			fwrite(tm[1], sizeof(double), reps, of);
			fwrite(&flags, 4, 1, of);
			fwrite(&pad, 4, 1, of);
		}
		free(tm[0]);
		free(tm[1]);
	}
	if (fclose(of) != 0) die(2, "write out", argv[3]);
	state[0] = 'd';
	return 0;
}
