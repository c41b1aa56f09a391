#!/bin/sh
# Runs crucible pipeline Nightly_Build on Kubernetes: each stage's Indexed Job after the
# previous one completed. Written by crucible plan --executor k8s. Re-running
# it after a failure redoes only the shard parts without a committed manifest.
set -eu
cd "$(dirname "$0")"

wait_job() {
  while :; do
    state=$(kubectl -n 'data' get job "$1" -o jsonpath='{.status.conditions[?(@.status=="True")].type}')
    case "$state" in
    *Complete*) return 0 ;;
    *Failed*) echo "job $1 failed; see kubectl -n 'data' logs -l job-name=$1" >&2; return 1 ;;
    esac
    sleep 10
  done
}

kubectl -n 'data' delete job crucible-nightly-build-ingest --ignore-not-found --wait
kubectl -n 'data' apply -f 01-ingest.yaml
wait_job crucible-nightly-build-ingest

kubectl -n 'data' delete job crucible-nightly-build-verify-kernels --ignore-not-found --wait
kubectl -n 'data' apply -f 02-verify_kernels.yaml
wait_job crucible-nightly-build-verify-kernels

kubectl -n 'data' delete job crucible-nightly-build-dedup --ignore-not-found --wait
kubectl -n 'data' apply -f 03-dedup.yaml
wait_job crucible-nightly-build-dedup

kubectl -n 'data' delete job crucible-nightly-build-pack --ignore-not-found --wait
kubectl -n 'data' apply -f 04-pack.yaml
wait_job crucible-nightly-build-pack
