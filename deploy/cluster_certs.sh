#!/usr/bin/env bash
# Makes a kgym cluster's credentials: a CA of its own and, for each node named, a directory
# DIR/NODE with ca.pem, node.pem and node.key (the node's certificate, signed by the CA). Give
# `kgym serve --cluster-certs DIR/serve` and `kgym worker --cluster-certs DIR/NODE` (or
# $KGYM_CLUSTER_CERTS) their own directory; copy each to its node only (scp -r DIR/NODE ...).
# DIR/ca.key signs new nodes later (run this again with the new names and the same DIR); keep
# it off the nodes. A node whose key leaks: make a new CA and new credentials for every node.
#
#   usage: deploy/cluster_certs.sh DIR NODE [NODE...]     e.g. deploy/cluster_certs.sh certs serve gpu1 gpu2
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
dir=$1; shift
days=${KGYM_CERT_DAYS:-825}
mkdir -p "$dir"
umask 077
if [ ! -f "$dir/ca.key" ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$dir/ca.key" \
    -out "$dir/ca.pem" -days "$days" -subj "/CN=kgym cluster CA" 2>/dev/null
  echo "kgym cluster CA: $dir/ca.pem (its key $dir/ca.key signs nodes: keep it off them)"
fi
for node in "$@"; do
  mkdir -p "$dir/$node"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$dir/$node/node.key" \
    -out "$dir/$node/node.csr" -subj "/CN=$node" 2>/dev/null
  openssl x509 -req -in "$dir/$node/node.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
    -out "$dir/$node/node.pem" -days "$days" 2>/dev/null
  rm -f "$dir/$node/node.csr"
  cp "$dir/ca.pem" "$dir/$node/ca.pem"
  echo "node $node: $dir/$node (ca.pem node.pem node.key)"
done
