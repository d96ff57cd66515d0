#!/usr/bin/env bash
# Synthetic ratings in MovieLens' ratings.csv layout with ML-20M's shape, for the quality and
# scale benchmarks where ML-20M itself is not at hand (docs/quality.md): USERS users (default
# 138,493) with PER distinct items each (default 144) out of ITEMS (default 27,278). Half of a
# user's items are drawn by Zipf popularity (exponent 0.9) over the whole catalog, half from one
# of 50 taste groups of contiguous items (skewed to the group's first items), so there is
# structure to find; user and movie ids from 0, every rating 5.0, timestamps 0. Deterministic.
# Usage: scripts/ml20m_shaped_ratings.sh OUT.csv   (USERS=... PER=... ITEMS=...)
set -euo pipefail
out=${1:?usage: ml20m_shaped_ratings.sh OUT.csv}
users=${USERS:-138493}
per=${PER:-144}
items=${ITEMS:-27278}
((per <= items)) || { echo "ml20m_shaped_ratings: PER > ITEMS" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/gen.c" <<'C'
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
static unsigned long long s = 88172645463325252ull;
static double uniform(void) {
  s ^= s << 13; s ^= s >> 7; s ^= s << 17;
  return (double)(s >> 11) * (1.0 / 9007199254740992.0);
}
int main(int argc, char** argv) {
  const int users = atoi(argv[1]), per = atoi(argv[2]), items = atoi(argv[3]), groups = 50;
  double* cum = malloc(sizeof(double) * items);
  double total = 0;
  for (int i = 0; i < items; ++i) cum[i] = total += 1.0 / pow(i + 1, 0.9);
  char* seen = calloc(items, 1);
  int* got = malloc(sizeof(int) * per);
  static char buf[1 << 20];
  setvbuf(stdout, buf, _IOFBF, sizeof buf);
  printf("userId,movieId,rating,timestamp\n");
  for (int u = 0; u < users; ++u) {
    const int g = (int)(uniform() * groups);
    int n = 0;
    while (n < per) {
      int it;
      if (uniform() < 0.5) {  /* popularity: the first item whose cumulative weight passes r */
        const double r = uniform() * total;
        int lo = 0, hi = items - 1;
        while (lo < hi) {
          const int m = (lo + hi) / 2;
          if (cum[m] < r) lo = m + 1; else hi = m;
        }
        it = lo;
      } else {  /* taste group g */
        it = (g * (items / groups) + (int)(pow(uniform(), 2.0) * (items / groups))) % items;
      }
      if (!seen[it]) { seen[it] = 1; got[n++] = it; }
    }
    for (int k = 0; k < n; ++k) { printf("%d,%d,5.0,0\n", u, got[k]); seen[got[k]] = 0; }
  }
  return 0;
}
C
cc -O2 -o "$work/gen" "$work/gen.c" -lm
"$work/gen" "$users" "$per" "$items" >"$out.part"
mv "$out.part" "$out"
echo "ml20m_shaped_ratings: $out: $users users x $per items out of $items" >&2
