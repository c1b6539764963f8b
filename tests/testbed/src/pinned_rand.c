// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* Preloaded into OpenSM by tests that compare path SLs byte for byte. DFSSSP spreads the paths
 * of a layer split over several VLs by calling rand() in its path_sl, so OpenSM's own answer to
 * one query changes from call to call (every choice is deadlock-free). With rand() pinned, the
 * SL of a path is a function of the path, and two answers can be compared. */
int rand(void);

int rand(void) {
  return 0;
}
