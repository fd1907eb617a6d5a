#!/usr/bin/env bash
# Build (offline when ~/.m2 already holds everything) and start a local OpenSearch node.
# Usage: run.sh <home-dir> <http-port> <transport-port>
set -euo pipefail
cd "$(dirname "$0")"

if [ "$#" -ne 3 ]; then
  echo "usage: $0 <home-dir> <http-port> <transport-port>" >&2
  exit 2
fi

if [ ! -d target/classes ] || [ ! -d target/lib ] || [ ! -d target/knn ] \
   || [ pom.xml -nt target/classes ] \
   || [ -n "$(find src -newer target/classes -type f 2>/dev/null | head -n 1)" ]; then
  if ! mvn -q -B -o package dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=target/lib >&2; then
    mvn -q -B package dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=target/lib >&2
  fi
  touch target/classes
fi

exec java -Xms512m -Xmx1g \
  -cp "target/classes:target/lib/*:target/knn/*" \
  dev.prme.LocalOpenSearch "$1" "$2" "$3"
