# test/bench/chart.gp: the benchmark at a glance, six panels, from the data
# files report.sql writes (tab-separated: label, kind, values...).  run.sh:
#   gnuplot -e "dir='...'; out='....png'; title='...'" chart.gp
# Each panel compares uidgen (blue) with what a PostgreSQL user has today
# (grey: sequences, identity, the bare series; orange: random(), UUIDs), and
# draws the issue's target as a dashed red line where there is one.

set terminal pngcairo size 1600,1000 font "DejaVu Sans,10" noenhanced
set output out
set datafile separator "\t"
set style fill solid 0.85 border -1
set grid ytics lc rgb "#dddddd"
set key samplen 1 font ",9"
set xtics rotate by -30 nomirror font ",9"
set ytics nomirror
set offsets 0.5, 0.5, 0, 0

blue = "#1f77b4"
grey = "#9a9a9a"
orange = "#ff7f0e"
red = "#d62728"
colour(kind) = kind eq "uid" ? 0x1f77b4 : kind eq "base" ? 0x9a9a9a : 0xff7f0e

set multiplot layout 2, 3 title title font ",13"

# 1. Per-row cost relative to the bare series; a log scale, since UUIDs and
#    the default generator cost ten times what the rest does.
set title "1. Cost per row ÷ bare generate_series (lower is better)"
set ylabel "× bare series (log scale)"
set yrange [*:*]
stats dir."/gen.dat" using 3 name "cost" nooutput
set logscale y 2
set yrange [0.5:cost_max * 3]
set boxwidth 0.7 relative
plot dir."/gen.dat" using 0:3:(colour(strcol(2))):xtic(1) with boxes lc rgb variable notitle, \
     "" using 0:3:(sprintf("%.2f×\n%+.0f ns", $3, $4)) with labels offset 0,1.3 font ",8" notitle
unset logscale y

# 2. Scaling.
set title "2. IDs/s with 2 backends ÷ 1 (target ≥ 1.8)"
set ylabel "× one backend"
set yrange [0:*]
set offsets 0.5, 0.5, graph 0.12, 0
set key top left
plot dir."/scale.dat" using 0:3:(colour(strcol(2))):xtic(1) with boxes lc rgb variable notitle, \
     "" using 0:3:(sprintf("%.2f×", $3)) with labels offset 0,0.7 font ",8" notitle, \
     1.8 with lines dt 2 lw 2 lc rgb red title "target 1.8×"

# 3. Insert tps relative to identity: one group per client count, one box per key.
kinds = system("cat ".dir."/insert.kinds")
keys = words(kinds)
w = 0.8 / keys
set title "3. Insert tps ÷ identity (target for uid: ≥ 0.95)"
set ylabel "× identity tps"
set yrange [0:*]
set xtics norotate
set boxwidth w
set key top left horizontal
load dir."/insert.xtics"
plot for [j=1:keys] dir."/insert.dat" using ($0 + (j - 1 - (keys - 1) / 2.0) * w):(column(j + 1)) \
         with boxes lc rgb (word(kinds, j) eq "uid" ? blue : word(kinds, j) eq "base" ? grey : orange) \
         title columnheader(j + 1), \
     for [j=1:keys] "" skip 1 using ($0 + (j - 1 - (keys - 1) / 2.0) * w):(column(j + 1)):(sprintf("%.2f", column(j + 1))) \
         with labels offset 0,0.7 font ",8" notitle, \
     0.95 with lines dt 2 lw 2 lc rgb red title "0.95×"
set xtics rotate by -30 autofreq
set key vertical
set offsets 0.5, 0.5, 0, 0

# 4a/4b. Size and leaf density of the primary key after loading, one box per
# way of loading (load.dat: key, kind, the sizes of each mode, the densities).
modes = (int(system("head -1 ".dir."/load.dat | awk -F'\t' '{ print NF }'")) - 2) / 2
w = 0.8 / modes
mode_colour(j) = j == 1 ? blue : j == 2 ? orange : j == 3 ? "#2ca02c" : grey
set xrange [*:*]
set yrange [*:*]
stats dir."/load.dat" skip 1 using 3 name "size" nooutput
max_size = size_max
do for [j=2:modes] {
	stats dir."/load.dat" skip 1 using (column(2 + j)) name "size" nooutput
	max_size = size_max > max_size ? size_max : max_size
}
size_format = max_size < 10 ? "%.1f" : "%.0f"
load dir."/load.xtics"
set boxwidth w
set key top center horizontal font ",8"
set title "4a. PK index size, MiB (target for uid ms, one statement: ≤ 1.02× identity)"
set ylabel "MiB"
set yrange [0:max_size * 1.3]
plot for [j=1:modes] dir."/load.dat" using ($0 + (j - 1 - (modes - 1) / 2.0) * w):(column(2 + j)) \
         with boxes lc rgb mode_colour(j) title columnheader(2 + j), \
     for [j=1:modes] "" skip 1 using ($0 + (j - 1 - (modes - 1) / 2.0) * w):(column(2 + j)):(sprintf(size_format, column(2 + j))) \
         with labels offset 0,0.7 font ",7" notitle

set title "4b. PK leaf density, % (target for uid ms, 8 clients: ≥ 85)"
set ylabel "%"
set yrange [0:125]
plot for [j=1:modes] dir."/load.dat" using ($0 + (j - 1 - (modes - 1) / 2.0) * w):(column(2 + modes + j)) \
         with boxes lc rgb mode_colour(j) title columnheader(2 + modes + j), \
     for [j=1:modes] "" skip 1 using ($0 + (j - 1 - (modes - 1) / 2.0) * w):(column(2 + modes + j)):(sprintf("%.0f", column(2 + modes + j))) \
         with labels offset 0,0.7 font ",7" notitle, \
     85 with lines dt 2 lw 2 lc rgb red title "85 %"
set key vertical font ",9"
set xtics autofreq

# 5. Connection churn.
set title "5. Time per new connection ÷ identity (target for uid: ≤ 1.10)"
set ylabel "× identity"
set yrange [0:*]
set offsets 0.5, 0.5, graph 0.12, 0
set boxwidth 0.6 relative
set key top left
plot dir."/churn.dat" using 0:3:(colour(strcol(2))):xtic(1) with boxes lc rgb variable notitle, \
     "" using 0:3:(sprintf("%.2f×", $3)) with labels offset 0,0.7 font ",8" notitle, \
     1.1 with lines dt 2 lw 2 lc rgb red title "1.10×"

unset multiplot
