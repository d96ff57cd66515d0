# Set-up shared by the nn-tune tool tests (sourced after common.sh, inside the work dir, with
# ratings.txt, features.idx and the training datasets made).
# tune_validation TOOLS: val_input.nc and val_output.nc, each user's first two items in and the
# others to find (users with fewer than three items are left out).
tune_validation() {
  awk -F'\t' '{ n = split($2, a, ":"); if (n < 3) next; in_ = a[1] ":" a[2]; out = "";
         for (i = 3; i <= n; i++) out = out (out == "" ? "" : ":") a[i];
         print $1 "\t" in_ > "val_in.txt"; print $1 "\t" out > "val_out.txt" }' ratings.txt
  "$1/nn-generate" -d input -i val_in.txt -o val_input.nc -f features.idx -s val_samples.idx \
    2>/dev/null
  "$1/nn-generate" -d output -i val_out.txt -o val_output.nc -f features.idx \
    -s val_samples.idx 2>/dev/null
}
# tune_config NETWORK_JSON: config/ holding that network and a command file of Adam steps.
tune_config() {
  mkdir -p config
  cp "$1" config/network.json
  cat >config/train.cdl <<'JSON'
{ "Version": 0.9, "Network": "network.json", "Command": "Train", "RandomSeed": 5,
  "Data": ["input.nc", "output.nc"],
  "TrainingParameters": { "Epochs": 10, "MiniBatch": 8, "Alpha": 0.01, "Optimizer": "Adam",
    "mu": 0.9, "Lambda": 0.0001, "Results": "network.nc" } }
JSON
}
# sigterm_after_first_row PID OUTPUT: waits until OUTPUT/results.tsv has a row, sends SIGTERM to
# PID and sets `status` to its exit status.
sigterm_after_first_row() {
  for _ in $(seq 600); do
    [[ $(awk 'NR > 1' "$2/results.tsv" 2>/dev/null | wc -l) -ge 1 ]] && break
    sleep 0.05
  done
  kill -TERM "$1"
  status=0
  wait "$1" || status=$?
}
# tune_setup TOOLS: common.sh's tiny ratings and datasets, their validation sets and config/
# with the tiny network of 8 hidden units.
tune_setup() {
  tiny_ratings
  tiny_datasets "$1"
  tune_validation "$1"
  tiny_config 8
  tune_config config.json
}
