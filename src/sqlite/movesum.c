/*-------------------------------------------------------------------------
 *
 * movesum.c
 *		  The SQL aggregate ssfdw_move_sum: a checksum of a set of rows
 *
 * A tenant move verifies that the copy of every table on the target holds
 * exactly the rows of the source.  Both sides are summed with this
 * aggregate, ssfdw_move_sum(col1, col2, ...): each row's values are hashed
 * with their storage classes (so the integer 1, the real 1.0 and the text
 * '1' differ), the hash is mixed, and the row hashes are added modulo 2^64.
 * The sum does not depend on the order the rows are read in, so the source
 * may be read by one index and the target by another, and because it is a
 * sum, the rows of some keys can be left out on both sides and checked
 * apart (move.c checks the rows written during the last phase that way).
 *
 * It is registered only on the handles a move or reference_check opens,
 * never on the handles queries run on.  This file must not include postgres.h, like every file
 * of src/sqlite/.
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <string.h>

#include "shardio.h"

#define SEED		0xcbf29ce484222325ULL
#define MULT		0x9e3779b97f4a7c15ULL

/* The running state of ssfdw_move_sum. */
typedef struct MoveSum
{
	uint64_t	sum;
} MoveSum;

/*
 * step
 *		Fold one 64-bit word into a hash: a multiply and a shift, eight
 *		bytes at a time (a byte-at-a-time hash costs a verification of a
 *		large tenant several times more).
 */
static inline uint64_t
step(uint64_t h, uint64_t w)
{
	h = (h ^ w) * MULT;
	return h ^ (h >> 29);
}

/*
 * hash_bytes
 *		Fold bytes into a hash, their length included.
 */
static uint64_t
hash_bytes(uint64_t h, const unsigned char *p, size_t len)
{
	uint64_t	w;

	h = step(h, (uint64_t) len);
	for (; len >= 8; p += 8, len -= 8)
	{
		memcpy(&w, p, 8);
		h = step(h, w);
	}
	if (len > 0)
	{
		w = 0;
		memcpy(&w, p, len);
		h = step(h, w);
	}
	return h;
}

/*
 * mix64
 *		The finalizer of splitmix64: spreads every input bit over the
 *		result, so that sums of row hashes do not cancel by accident.
 */
static uint64_t
mix64(uint64_t h)
{
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 31;
	return h;
}

/*
 * move_sum_step
 *		Add one row's hash to the sum: each value by its storage class and
 *		its bytes, with the column's position, so that swapped values
 *		differ.
 */
static void
move_sum_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	MoveSum    *acc = sqlite3_aggregate_context(ctx, sizeof(MoveSum));
	uint64_t	h = SEED;
	int			i;

	if (acc == NULL)
	{
		sqlite3_result_error_nomem(ctx);
		return;
	}
	for (i = 0; i < argc; i++)
	{
		int			type = sqlite3_value_type(argv[i]);

		h = step(h, ((uint64_t) i << 8) | (uint64_t) type);
		switch (type)
		{
			case SQLITE_INTEGER:
				h = step(h, (uint64_t) sqlite3_value_int64(argv[i]));
				break;
			case SQLITE_FLOAT:
				{
					double		d = sqlite3_value_double(argv[i]);
					uint64_t	w;

					memcpy(&w, &d, sizeof(w));
					h = step(h, w);
					break;
				}
			case SQLITE_TEXT:
				h = hash_bytes(h, sqlite3_value_text(argv[i]),
							   sqlite3_value_bytes(argv[i]));
				break;
			case SQLITE_BLOB:
				h = hash_bytes(h, sqlite3_value_blob(argv[i]),
							   sqlite3_value_bytes(argv[i]));
				break;
			default:
				break;
		}
	}
	acc->sum += mix64(h);
}

/*
 * move_sum_final
 *		The sum as a signed 64-bit integer (0 for no rows).
 */
static void
move_sum_final(sqlite3_context *ctx)
{
	MoveSum    *acc = sqlite3_aggregate_context(ctx, 0);
	uint64_t	sum = acc ? acc->sum : 0;
	sqlite3_int64 out;

	memcpy(&out, &sum, sizeof(out));
	sqlite3_result_int64(ctx, out);
}

/*
 * shardio_register_move_sum
 *		Define ssfdw_move_sum on a handle a move or reference_check opened.
 */
int
shardio_register_move_sum(sqlite3 *db)
{
	return sqlite3_create_function_v2(db, "ssfdw_move_sum", -1,
									  SQLITE_UTF8 | SQLITE_DETERMINISTIC,
									  NULL, NULL, move_sum_step,
									  move_sum_final, NULL);
}
