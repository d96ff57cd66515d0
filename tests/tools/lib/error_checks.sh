# Assertions shared by the errors_*.sh tool tests (sourced; expects a fail() function).
# expect_error STATUS REGEX command...: exit status, exactly one stderr line matching REGEX.
expect_error() {
  local want=$1 pattern=$2 got=0
  shift 2
  "$@" >out.txt 2>err.txt || got=$?
  [[ $got == "$want" ]] || fail "$* exited $got, expected $want: $(cat err.txt)"
  [[ $(wc -l <err.txt) == 1 ]] || fail "$*: expected one line on stderr, got: $(cat err.txt)"
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

