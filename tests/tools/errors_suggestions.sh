#!/usr/bin/env bash
# Messages for a newcomer's mistakes: a misspelt layer Source or DataSet name gets the nearest
# valid name ("did you mean 'Hidden'?"); a network JSON given where a command file belongs (and a
# command file or a JSON network where a network .nc belongs) is called what it is.
# Usage: errors_suggestions.sh <tool-dir> <source-dir>
set -euo pipefail
here=$(dirname "$(realpath "$0")")
tools=$(realpath "$1")
source "$here/lib/common.sh"
source "$here/lib/error_checks.sh"
enter_work_dir

tiny_ratings
tiny_datasets "$tools"
tiny_config
cat >train.cdl <<'JSON'
{ "Network": "bad.json", "Command": "Train", "Data": ["input.nc", "output.nc"],
  "TrainingParameters": { "Epochs": 1, "MiniBatch": 8, "CheckpointInterval": 0, "Results": "net.nc" } }
JSON

# A misspelt Source names the nearest layer.
sed 's/"Kind": "Output",/"Kind": "Output", "Source": "Hiden",/' config.json >bad.json
expect_error 1 "^nn-train: error: .*bad\.json: Layers\[2\]\.Source: layer \"Output\" names unknown source layer \"Hiden\"; layers are Input, Hidden, Output \(did you mean 'Hidden'\?\)$" \
  "$tools/nn-train" train.cdl
# A misspelt DataSet names the nearest dataset in the data files.
sed 's/"DataSet": "output"/"DataSet": "outptu"/' config.json >bad.json
expect_error 1 "^nn-train: error: .*layer 'Output': .*dataset 'outptu'.*available: 'input', 'output' \(did you mean 'output'\?\)$" \
  "$tools/nn-train" train.cdl
# A misspelt enum value.
sed 's/"Activation": "Sigmoid" }/"Activation": "Sigmiod" }/' config.json >bad.json
expect_error 1 "^nn-train: error: .*bad\.json: Layers\[1\]\.Activation: unknown \"Sigmiod\"; expected one of .*\(did you mean 'Sigmoid'\?\)$" \
  "$tools/nn-train" train.cdl
[[ ! -e net.nc ]] || fail "no network after errors"

# The network JSON given as the command file, and the command file given as the network.
expect_error 1 "^nn-train: error: config\.json: \(top level\): this looks like a network file, not a command file: it has Layers and no Command\." \
  "$tools/nn-train" config.json
cp config.json bad.json
expect_error 1 "^nn-train: error: train\.cdl: \(top level\): this looks like a command file \(CDL\), not a network file" \
  "$tools/nn-train" -c train.cdl -i input.nc -o output.nc -n net.nc
# A dataset .nc given as the command file.
expect_error 1 "^nn-train: error: input\.nc: this is a NetCDF file \(a dataset or a trained network\), not a command file" \
  "$tools/nn-train" input.nc
# nn-predict given the JSON network instead of the trained .nc.
printf 'u0\tm0:m1\n' >examples.txt
expect_error 1 "^nn-predict: error: config\.json: not a NetCDF file: this looks like a network JSON description \(or a command file\), not a trained network file" \
  "$tools/nn-predict" -n config.json -r examples.txt -i features.idx -o features.idx -k 2
echo "errors_suggestions: ok"
