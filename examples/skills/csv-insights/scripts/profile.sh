#!/bin/sh
# Print the header of a CSV file and the number of data rows.
set -eu
file=${1:?usage: profile.sh FILE.csv}
head -n 1 "$file" | tr ',' '\n' | nl -ba
echo "rows: $(($(wc -l < "$file") - 1))"
