/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Internet checksum helpers (RFC 1071 sums, RFC 1624 incremental update). */
#ifndef SARENA_BPF_LIB_CSUM_H_
#define SARENA_BPF_LIB_CSUM_H_

#include <linux/types.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/* Folds a 32-bit one's-complement accumulator to 16 bits (end-around carry, twice). */
static __always_inline __u16 sarena_csum_fold(__u32 sum) {
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  return (__u16)sum;
}

/*
 * Incremental update of a 16-bit Internet checksum when one 16-bit word of the covered data
 * changes from `old_word` to `new_word` — RFC 1624 equation 3: HC' = ~(~HC + ~m + m').
 * All three values are 16-bit words exactly as stored in the packet: one's-complement sums are
 * byte-order independent (RFC 1071 section 2(B)), so no byte swapping is needed as long as
 * every value is loaded the same way.
 */
static __always_inline __u16 sarena_csum_replace16(__u16 check, __u16 old_word, __u16 new_word) {
  __u32 sum = (__u32)(__u16)~check + (__u32)(__u16)~old_word + (__u32)new_word;
  return (__u16)~sarena_csum_fold(sum);
}

#endif /* SARENA_BPF_LIB_CSUM_H_ */
