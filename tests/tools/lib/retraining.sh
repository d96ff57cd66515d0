# Set-up shared by retraining.sh and mpi_warm_start.sh (sourced inside the work dir, after
# common.sh, with ratings.txt, features.idx and config.json made): make_day2 TOOLS writes day
# two of the tiny catalog (m0 gone, m99 new, two new users, rows in another order so the items
# are numbered afresh) as day2.txt, day2_in.nc, day2_out.nc and day2.idx.
make_day2() {
  local tools=$1
  python3 - <<'PY'
lines = [l.rstrip("\n") for l in open("ratings.txt")]
out = []
for l in reversed(lines):  # another order: the items are numbered afresh
    user, items = l.split("\t")
    kept = [i for i in items.split(":") if i != "m0"]
    if user in ("u1", "u4"):
        kept.append("m99")
    out.append(user + "\t" + ":".join(kept))
out += ["u100\tm1:m2:m99", "u101\tm7:m8:m9"]
open("day2.txt", "w").write("\n".join(out) + "\n")
PY
  "$tools/nn-generate" -d input -i day2.txt -o day2_in.nc -f day2.idx -s day2_samples.idx -c \
    2>/dev/null
  "$tools/nn-generate" -d output -i day2.txt -o day2_out.nc -f day2.idx -s day2_samples.idx \
    2>/dev/null
}

# weights NET: the matrices and the output bias as ncdump prints them.
weights() { ncdump -v weight0_weights,weight1_weights,weight1_bias "$1" | sed -n '/data:/,$p'; }
