# Sourced by the review benchmarks: builds this tree's aicr ($cand_bin)
# and the reference aicr from BENCH_REF ($ref_bin) the way `make build`
# does, into a temporary directory removed on exit.
# 6e2ad7b is main just before issue 14's pipeline work.
bench_ref=${BENCH_REF:-6e2ad7b}
bench_tmp=$(mktemp -d)
trap 'rm -rf "$bench_tmp"' EXIT INT TERM
ref_bin=$bench_tmp/aicr-ref
cand_bin=$bench_tmp/aicr-cand
mkdir "$bench_tmp/ref-src"
git archive "$bench_ref" | tar -x -C "$bench_tmp/ref-src"
(cd "$bench_tmp/ref-src" && CGO_ENABLED=0 go build -trimpath -o "$ref_bin" ./cmd/aicr)
CGO_ENABLED=0 go build -trimpath -o "$cand_bin" ./cmd/aicr
echo "reference: aicr at $(git rev-parse --short "$bench_ref"); candidate: this tree at $(git describe --always --dirty)" >&2
echo "load: $(uptime)" >&2
