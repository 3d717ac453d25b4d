/*
 * alltoall.c: the MPI side of bench/alltoall.sh. One rank of P: MPI_Init
 * and a first MPI_Barrier (the wire-up, timed from A2A_LAUNCH_NS, Unix
 * nanoseconds, set before the launcher started), then REPS exchanges, each
 * an MPI_Barrier and an MPI_Alltoall of M bytes per pair, timed from the
 * barrier's return to the all-to-all's; every byte received is checked
 * against the pattern bench/alltoall's Go ranks send (exchange.go). It
 * prints the line the Go ranks print, with mode=mpi:
 *
 *   alltoall mode=mpi p=P m=M rank=R reps=REPS median_ns=N wireup_ns=W ns=N1,...
 *
 *   mpicc -O2 -o alltoall-mpi alltoall.c
 *   mpiexec -n 8 ./alltoall-mpi -m 65536 -reps 11
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* exchange.go's patternSeed and patternWord. */
static uint64_t pattern_seed(uint64_t s, uint64_t d, uint64_t k)
{
	uint64_t x = s << 42 ^ d << 21 ^ k;
	x ^= x >> 30;
	x *= 0xBF58476D1CE4E5B9ULL;
	x ^= x >> 27;
	x *= 0x94D049BB133111EBULL;
	return x ^ x >> 31;
}

static uint64_t pattern_word(uint64_t seed, uint64_t j) { return seed ^ (j + 1) * 0x9E3779B97F4A7C15ULL; }

/* The bytes rank s sends rank d in exchange k: little-endian words. */
static void fill(unsigned char *buf, size_t n, int s, int d, int k)
{
	uint64_t seed = pattern_seed(s, d, k);
	for (size_t i = 0; i < n; i++)
		buf[i] = (unsigned char)(pattern_word(seed, i / 8) >> (8 * (i % 8)));
}

static long check(const unsigned char *buf, size_t n, int s, int d, int k)
{
	uint64_t seed = pattern_seed(s, d, k);
	for (size_t i = 0; i < n; i++)
		if (buf[i] != (unsigned char)(pattern_word(seed, i / 8) >> (8 * (i % 8))))
			return (long)i;
	return -1;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	size_t m = 8;
	int reps = 5;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-m"))
			m = strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "-reps"))
			reps = atoi(argv[i + 1]);
	}
	MPI_Init(&argc, &argv);
	MPI_Barrier(MPI_COMM_WORLD);
	int64_t ready = now_ns();
	int rank, p;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &p);
	const char *launch = getenv("A2A_LAUNCH_NS");
	int64_t wireup = launch ? ready - strtoll(launch, NULL, 10) : -1;

	unsigned char *send = malloc(m * p), *recv = malloc(m * p);
	int64_t *ns = malloc(sizeof(int64_t) * reps), *sorted = malloc(sizeof(int64_t) * reps);
	if (!send || !recv || !ns || !sorted) {
		fprintf(stderr, "alltoall-mpi: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	for (int k = 0; k < reps; k++) {
		for (int d = 0; d < p; d++) {
			fill(send + d * m, m, rank, d, k);
			fill(recv + d * m, m, d, rank, k);
			for (size_t i = 0; i < m; i++)
				recv[d * m + i] = ~recv[d * m + i];
		}
		MPI_Barrier(MPI_COMM_WORLD);
		int64_t t0 = now_ns();
		MPI_Alltoall(send, (int)m, MPI_BYTE, recv, (int)m, MPI_BYTE, MPI_COMM_WORLD);
		ns[k] = now_ns() - t0;
		for (int s = 0; s < p; s++) {
			long off = check(recv + s * m, m, s, rank, k);
			if (off >= 0) {
				fprintf(stderr, "alltoall-mpi: rank %d: from rank %d, exchange %d, offset %ld differs\n", rank, s, k, off);
				MPI_Abort(MPI_COMM_WORLD, 1);
			}
		}
	}
	memcpy(sorted, ns, sizeof(int64_t) * reps);
	qsort(sorted, reps, sizeof(int64_t), cmp64);
	int64_t med = reps % 2 ? sorted[reps / 2] : (sorted[reps / 2 - 1] + sorted[reps / 2]) / 2;
	/* One write per line, so that the ranks' lines do not interleave. */
	size_t cap = 256 + 24 * (size_t)reps, len = 0;
	char *line = malloc(cap);
	len += snprintf(line, cap, "alltoall mode=mpi p=%d m=%zu rank=%d reps=%d median_ns=%lld wireup_ns=%lld ns=", p, m, rank, reps, (long long)med, (long long)wireup);
	for (int k = 0; k < reps; k++)
		len += snprintf(line + len, cap - len, "%s%lld", k ? "," : "", (long long)ns[k]);
	len += snprintf(line + len, cap - len, "\n");
	fwrite(line, 1, len, stdout);
	fflush(stdout);
	MPI_Finalize();
	return 0;
}
