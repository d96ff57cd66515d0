#!/usr/bin/env bash
# nn-generate on files in other formats: space-separated features and one line per (sample,
# feature) stop with a message naming the expected format (they used to give a feature named
# "dune alien", and "777 repeated samples replaced" with most of the data gone); --rows reads
# the long form users have (MovieLens ratings.csv) into the same dataset as the one-line-per-sample
# form; "-" reads standard input; -q prints errors only.
# Usage: generate_formats.sh <tool-dir> <source-dir>
set -euo pipefail
tools=$(realpath "$1")
source "$(dirname "$(realpath "$0")")/lib/common.sh"
source "$(dirname "$(realpath "$0")")/lib/error_checks.sh"
enter_work_dir
require_netcdf_bin
gen=$tools/nn-generate

# Space-separated features.
printf 'u0\tdune alien\nu1\tm1:m2\n' >spaces.txt
expect_error 1 'spaces.txt:1: feature "dune alien" contains a blank; features are separated by '"':'" \
  "$gen" -d input -i spaces.txt -o spaces.nc -f f.idx -s s.idx -c
no_outputs spaces.nc f.idx s.idx

# One line per (user, item): refused, pointing at --rows.
printf 'u0\tm1\nu0\tm2\nu1\tm3\n' >pairs.txt
expect_error 1 'pairs.txt:2: sample "u0" is on an earlier line too.*nn-generate --rows' \
  "$gen" -d input -i pairs.txt -o pairs.nc -f f.idx -s s.idx -c
no_outputs pairs.nc f.idx s.idx

# A CSV without --rows: no examples, and the message says what to do.
printf 'userId,movieId,rating,timestamp\n1,10,4.0,9\n' >ratings.csv
expect_error 1 'no examples found .*--rows' "$gen" -d input -i ratings.csv -o x.nc -f f.idx -s s.idx -c

# --rows: MovieLens layout (header, extra timestamp column, CRLF, a user's rows not adjacent)
# gives the same dataset and indices as the equivalent one-line-per-user text.
printf 'userId,movieId,rating,timestamp\r\n1,10,4.0,964982703\r\n1,30,5.0,964982931\r\n' >ratings.csv
printf '2,20,3.5,964982224\r\n3,10,1.0,964983000\r\n1,20,2.0,964984000\r\n' >>ratings.csv
printf '1\t10,4.0:30,5.0:20,2.0\n2\t20,3.5\n3\t10,1.0\n' >short.txt
for type in indicator analog; do
  "$gen" -q -d input -i short.txt -o short.nc -f short_f.idx -s short_s.idx -c -t $type
  "$gen" -d input -i ratings.csv --rows --header -o rows.nc -f rows_f.idx -s rows_s.idx -c -t $type \
    2>rows.err
  grep -q '3 samples, 3 features (3 new), 5 non-zeros, .*5 rows with extra columns (ignored)' rows.err ||
    fail "--rows summary ($type): $(cat rows.err)"
  cmp short_f.idx rows_f.idx && cmp short_s.idx rows_s.idx || fail "--rows indices differ ($type)"
  [[ $(ncdump rows.nc | grep -v '^netcdf') == $(ncdump short.nc | grep -v '^netcdf') ]] ||
    fail "--rows dataset differs from the one-line-per-sample form ($type)"
  rm -f rows_* short_*
done
# Without --header the header row is data: in analog mode its rating is not a number.
expect_error 1 'ratings.csv:1: .*"rating" is not a finite number' \
  "$gen" -d input -i ratings.csv --rows -t analog -o x.nc -f f.idx -s s.idx -c
rc=0
"$gen" -d input -i short.txt --header -o x.nc -f f.idx -s s.idx -c 2>err.txt || rc=$?
[[ $rc == 2 ]] && grep -q -- '--header needs --rows' err.txt || fail "--header without --rows: rc=$rc $(cat err.txt)"

# "-" is standard input; -q prints nothing on success.
"$gen" -q -d input -i - -o stdin.nc -f stdin_f.idx -s stdin_s.idx -c <short.txt 2>quiet.err
[[ ! -s quiet.err ]] || fail "-q printed: $(cat quiet.err)"
"$gen" -q -d input -i short.txt -o file.nc -f file_f.idx -s file_s.idx -c
[[ $(ncdump stdin.nc | grep -v '^netcdf') == $(ncdump file.nc | grep -v '^netcdf') ]] ||
  fail "-i - should read standard input"
cat ratings.csv | "$gen" -q -d input -i - --rows --header -o sorted.nc -f g.idx -s h.idx -c
[[ $(wc -l <h.idx) == 3 ]] || fail "--rows from standard input: $(cat h.idx)"

echo "generate_formats: all checks passed"
