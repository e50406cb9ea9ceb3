# fp8scale.gp: the amax and the FP8 scale of each quantized tensor of one run per step, on
# rank 0: two panels over one step axis, log scale. One line per tensor, the same colour and
# dash in both panels; the key at the right names them.
#   datafile  one block per tensor: step, amax (of the codes, in scaled units), scale
#   n, names  the tensors (as in common.gp)
load common_gp
unset title
set multiplot title title_text
set logscale y
set format y '%.0e'
# fixed margins: both panels share the x positions; the key has the right third
set lmargin at screen 0.09
set rmargin at screen 0.66
unset key

set tmargin at screen 0.90
set bmargin at screen 0.53
set format x ''
unset xlabel
set ylabel 'amax of the codes'
# 8 colours times 4 dash types tell 32 lines apart (report.c draws no more); the
# formats' largest values are dashed: an amax there uses the whole range
plot for [i=1:n] datafile index (i-1) using 1:2 with lines lw 1.2 \
		lc ((i - 1) % 8 + 1) dt 1 + (i - 1) / 8, \
	448 with lines dt 2 lw 1 lc rgb '#888888', \
	57344 with lines dt 3 lw 1 lc rgb '#888888'

set tmargin at screen 0.48
set bmargin at screen 0.10
set format x '%g'
set xlabel 'step'
set ylabel 'scale'
plot for [i=1:n] datafile index (i-1) using 1:3 with lines lw 1.2 \
	lc ((i - 1) % 8 + 1) dt 1 + (i - 1) / 8

# the key: a plot of nothing beside both panels, as tall as both (a key inside one
# panel breaks into columns that leave the picture)
set lmargin at screen 0.68
set rmargin at screen 0.99
set tmargin at screen 0.90
unset border
unset tics
unset xlabel
unset ylabel
unset grid
unset logscale
set xrange [0:1]
set yrange [0:1]
set key inside left top Left reverse font ',8' spacing 0.85 samplen 2.5
plot for [i=1:n] NaN with lines lw 1.2 lc ((i - 1) % 8 + 1) dt 1 + (i - 1) / 8 \
		title word(names, i), \
	NaN with lines dt 2 lw 1 lc rgb '#888888' title 'E4M3 max 448', \
	NaN with lines dt 3 lw 1 lc rgb '#888888' title 'E5M2 max 57344'
unset multiplot
