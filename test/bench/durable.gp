# test/bench/durable.gp: durable.sh's results at a glance, eight panels, from
# the data files durable-report.sql writes (tab-separated, a header row
# naming the schemes; a row a workload, "clients×rows a transaction").
#   gnuplot -e "dir='...'; out='....png'; title='...'; schemes='identity uid_backend ...'" durable.gp
# One colour a scheme in every panel: identity grey, uidgen blue (scope
# server the darker), the UUIDs orange and red, snowflake green.

set terminal pngcairo size 2200,1050 font "DejaVu Sans,10" noenhanced
set output out
set datafile separator "\t"
set datafile missing ""
set style fill solid 0.85 border -1
set grid ytics lc rgb "#dddddd"
set key samplen 1 font ",9" top left horizontal
set xtics nomirror font ",9"
set ytics nomirror
set xlabel "clients × rows a transaction" font ",9"

colour(s) = s eq "identity" ? "#9a9a9a" : s eq "uid_backend" ? "#6baed6" : s eq "uid_server" ? "#08519c" : \
            s eq "uuid" ? "#ff7f0e" : s eq "uuidv7" ? "#d62728" : "#2ca02c"
colour_n(s) = s eq "identity" ? 0x9a9a9a : s eq "uid_backend" ? 0x6baed6 : s eq "uid_server" ? 0x08519c : \
              s eq "uuid" ? 0xff7f0e : s eq "uuidv7" ? 0xd62728 : 0x2ca02c
red = "#d62728"

# The schemes of the ratio files: all but identity.
others = ""
do for [i=1:words(schemes)] { if (word(schemes, i) ne "identity") { others = others." ".word(schemes, i) } }

rows = int(system("tail -n +2 ".dir."/tps_ratio.dat | wc -l"))
set xrange [-0.5:rows - 0.5]

# grouped FILE NAMES FORMAT: bars a workload, one a scheme of NAMES (the
# file's columns 2...), each labelled with its value in FORMAT.
# The workloads' names are the tics, under each group's middle.
grouped(file, names, fmt) = sprintf("plot '%s' skip 1 using 0:(NaN):xtic(1) notitle, for [j=1:%d] '' using ($0 + (j - 1 - (%d - 1) / 2.0) * %g):(column(j + 1)) with boxes lc rgb colour(word('%s', j)) title columnheader(j + 1), for [j=1:%d] '' skip 1 using ($0 + (j - 1 - (%d - 1) / 2.0) * %g):(column(j + 1)):(sprintf('%s', column(j + 1))) with labels offset 0,0.6 font ',7' notitle", \
	file, words(names), words(names), 0.84 / words(names), names, words(names), words(names), 0.84 / words(names), fmt)

set multiplot layout 2, 4 title title font ",13"

set boxwidth 0.84 / words(others)
set title "1. Rows/s ÷ identity in the same round (higher is better)"
set ylabel "× identity"
set yrange [0:*]
set offsets 0, 0, graph 0.3, 0
eval grouped(dir."/tps_ratio.dat", others, "%.2f").", 1 with lines dt 2 lw 2 lc rgb red notitle"

set title "2. Backend CPU a row ÷ identity (lower is better)"
eval grouped(dir."/cpu_ratio.dat", others, "%.2f").", 1 with lines dt 2 lw 2 lc rgb red notitle"

set title "3. p99 latency ÷ identity (lower is better)"
eval grouped(dir."/p99_ratio.dat", others, "%.2f").", 1 with lines dt 2 lw 2 lc rgb red notitle"

set boxwidth 0.84 / words(schemes)
set title "4. WAL bytes a row (log scale)"
set ylabel "bytes"
set logscale y 10
set yrange [*:*]
set offsets 0, 0, graph 0.3, 0
eval grouped(dir."/wal.dat", schemes, "%.0f")

set title "5. Full-page images per 1,000 rows (log scale)"
set ylabel "FPI"
eval grouped(dir."/fpi.dat", schemes, "%.1f")
unset logscale y

set title "6. Primary key growth, bytes a row"
set ylabel "bytes"
set yrange [0:*]
set offsets 0, 0, graph 0.3, 0
eval grouped(dir."/index_per_row.dat", schemes, "%.0f")

set title "7. Leaf space each window added, % full (identity ≈ 90)"
set ylabel "%"
set yrange [0:135]
set offsets 0, 0, 0, 0
eval grouped(dir."/added_density.dat", schemes, "%.0f")

set title "8. Primary key at the end: bytes a row (leaf density)"
set ylabel "bytes a row"
set xlabel ""
set xrange [*:*]
set yrange [0:*]
set offsets 0.5, 0.5, graph 0.12, 0
set boxwidth 0.6
set xtics rotate by -20
plot dir."/final.dat" using 0:2:(colour_n(word(schemes, int($0) + 1))):xtic(1) with boxes lc rgb variable notitle, \
     "" using 0:2:(sprintf("%.1f (%.0f %%)", $2, $3)) with labels offset 0,0.7 font ",8" notitle

unset multiplot
