/* SPDX-License-Identifier: Apache-2.0 */
/* The non-coherent channel protocol (docs/devpool.md), for spin.

   Two slots of one record each; M messages. Memory holds each line; the
   producer and the consumer each have a cache of every line. A line moves
   whole (sequence and record together), as a 64-byte line does. A third
   process is the caches' own behaviour: at any moment it evicts a line
   (writing it back when dirty) or prefetches one (a fill from memory that
   may be stale later).

   Checked: every record the consumer accepts is the next message (no loss,
   duplicate or stale record: assert), and under weak fairness every message
   is delivered (ltl `delivered`), whatever the caches do.
   -DDROP_WRITE_BACK, -DDROP_CONSUMER_INVALIDATE, -DDROP_PRODUCER_INVALIDATE
   remove one step of the protocol; spin must then find a violation.

   spin -a channel.pml && cc -o pan pan.c && ./pan -a -f */

#define N 2
#ifndef M
#define M 6
#endif

/* memory: a slot line is (sequence, record); the consumer line a count */
byte mem_seq[N]; byte mem_rec[N]; byte mem_consumed;

/* producer's cache */
bool p_has[N]; bool p_dirty[N]; byte p_seq[N]; byte p_rec[N];
bool p_has_cl; byte p_cl;
/* consumer's cache */
bool c_has[N]; byte c_seq[N]; byte c_rec[N];
bool c_has_cl; bool c_dirty_cl; byte c_cl;

byte received;

/* producer side */
inline p_store(i, s, r) { d_step { p_has[i] = true; p_dirty[i] = true; p_seq[i] = s; p_rec[i] = r } }
inline p_write_back(i) {
#ifndef DROP_WRITE_BACK
  d_step { if :: p_has[i] && p_dirty[i] -> mem_seq[i] = p_seq[i]; mem_rec[i] = p_rec[i]; p_dirty[i] = false :: else -> skip fi }
#else
  skip
#endif
}
inline p_invalidate_cl() {
#ifndef DROP_PRODUCER_INVALIDATE
  p_has_cl = false
#else
  skip
#endif
}
inline p_load_cl(out) { d_step { if :: !p_has_cl -> p_cl = mem_consumed; p_has_cl = true :: else -> skip fi; out = p_cl } }

/* consumer side */
inline c_load(i, s, r) { d_step { if :: !c_has[i] -> c_seq[i] = mem_seq[i]; c_rec[i] = mem_rec[i]; c_has[i] = true :: else -> skip fi; s = c_seq[i]; r = c_rec[i] } }
inline c_invalidate(i) {
#ifndef DROP_CONSUMER_INVALIDATE
  c_has[i] = false
#else
  skip
#endif
}
inline c_store_cl(v) { d_step { c_has_cl = true; c_dirty_cl = true; c_cl = v } }
inline c_write_back_cl() { d_step { if :: c_has_cl && c_dirty_cl -> mem_consumed = c_cl; c_dirty_cl = false :: else -> skip fi } }

active proctype producer() {
  byte pos = 0; byte seen = 0; byte v;
  do
  :: pos == M -> break
  :: pos < M && pos - seen >= N ->
     /* ring full: re-read the consumer line from memory */
     p_invalidate_cl();
     p_load_cl(v);
     if :: v >= seen && v <= pos -> seen = v :: else -> skip fi
  :: pos < M && pos - seen < N ->
     p_store(pos % N, pos + 1, pos);
     p_write_back(pos % N);
     pos++
  od
}

active proctype consumer() {
  byte pos = 0; byte s; byte r;
  do
  :: pos == M -> break
  :: pos < M ->
     c_load(pos % N, s, r);
     if
     :: s != pos + 1 ->
        /* not ready, or an earlier lap kept in the cache: look at memory */
        c_invalidate(pos % N);
        c_load(pos % N, s, r)
     :: else -> skip
     fi;
     if
     :: s == pos + 1 ->
        assert(r == pos);
        received++;
        /* consumed every record of the line: drop it */
        c_invalidate(pos % N);
        pos++;
        c_store_cl(pos);
        c_write_back_cl()
     :: else -> skip
     fi
  od
}

/* What caches do on their own, whenever they like. */
active proctype caches() {
  byte i;
  do
  :: i = 0
  :: i = 1
  /* the producer evicts a slot line: written back when dirty */
  :: d_step { p_has[i] && p_dirty[i] -> mem_seq[i] = p_seq[i]; mem_rec[i] = p_rec[i]; p_has[i] = false; p_dirty[i] = false }
  :: d_step { p_has[i] && !p_dirty[i] -> p_has[i] = false }
  /* the consumer prefetches a slot line (possibly not yet written back) or evicts it */
  :: d_step { !c_has[i] -> c_seq[i] = mem_seq[i]; c_rec[i] = mem_rec[i]; c_has[i] = true }
  :: d_step { c_has[i] -> c_has[i] = false }
  /* the consumer line: the producer prefetches or drops it, the consumer evicts it */
  :: d_step { !p_has_cl -> p_cl = mem_consumed; p_has_cl = true }
  :: d_step { p_has_cl -> p_has_cl = false }
  :: d_step { c_has_cl && c_dirty_cl -> mem_consumed = c_cl; c_has_cl = false; c_dirty_cl = false }
  :: d_step { c_has_cl && !c_dirty_cl -> c_has_cl = false }
  od
}

ltl delivered { <> (received == M) }
