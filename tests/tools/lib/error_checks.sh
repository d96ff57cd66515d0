# Assertions shared by the errors_*.sh tool tests (sourced; expects a fail() function).
# expect_error STATUS REGEX command...: exit status, and exactly one error line on stderr,
# matching REGEX and last (progress lines that came before it are allowed: logs go to stderr).
# err.txt keeps that error line, log.txt the whole of stderr.
expect_error() {
  local want=$1 pattern=$2 got=0
  shift 2
  "$@" >out.txt 2>log.txt || got=$?
  grep -E '^nn-[a-z]+: (rank [0-9]+: )?error: ' log.txt >err.txt || true
  [[ $got == "$want" ]] || fail "$* exited $got, expected $want: $(cat log.txt)"
  [[ $(wc -l <err.txt) == 1 ]] || fail "$*: expected one error line on stderr, got: $(cat log.txt)"
  [[ $(tail -n 1 log.txt) == "$(cat err.txt)" ]] ||
    fail "$*: the error should be the last line on stderr: $(cat log.txt)"
  grep -Eq -- "$pattern" err.txt || fail "$*: message does not match /$pattern/: $(cat err.txt)"
}

# no_outputs FILE...: none of the files, and no temporary file, exists.
no_outputs() {
  local f
  for f in "$@"; do
    [[ ! -e $f ]] || fail "output '$f' left behind after an error"
  done
  if compgen -G '*.tmp*' >/dev/null || compgen -G '.*.tmp.*' >/dev/null; then
    fail "temporary file left: $(ls -a | grep '\.tmp')"
  fi
}

