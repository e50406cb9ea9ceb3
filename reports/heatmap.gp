# heatmap.gp: where two runs differ, per step (x) and tensor (y, execution order, top
# down): the colour of a cell is log10 of the relative difference of the L2 norms, the
# largest over ranks; two bands below the scale say 'equal' (every traced value and the
# hash agree on every rank) and 'no row' (one run stored none). The first divergence is
# circled and named.
#   datafile       lines 'x y value', one block per row of cells
#   nx, ny, xbin   columns, rows, steps per column (x is in steps)
#   ylab           array (ny): the name of each row
#   mark           1: circle (mark_x, mark_y), and say mark_text above the plot; 2: say
#                  mark_text, a divergence at no cell (a rank or steps one run lacks);
#                  0: the runs agree, which is said there instead
load common_gp
unset grid
unset key
set xrange [-0.5:nx * xbin - 0.5]
set yrange [ny - 0.5:-0.5]
set xtics out nomirror
set ytics out nomirror scale 0.5 font ',8' ()
do for [i=1:ny] {
	set ytics add (ylab[i] i - 1)
}
set cbrange [-14:0]
# -14..-13 'equal', -13..-12 'no row', then 1e-12 (dark) to 1 (bright)
set palette defined (-14 '#e4e4e4', -13 '#e4e4e4', -13 '#d03030', -12 '#d03030', \
	-12 '#30105a', -9 '#3b528b', -6 '#21918c', -3 '#5ec962', 0 '#fde725')
set cbtics ('equal' -13.5, 'no row' -12.5, '1e-12' -12, '1e-9' -9, '1e-6' -6, '1e-3' -3, '1' 0)
set cblabel '|L2 a - L2 b| / max(L2 a, L2 b)'
set style textbox opaque fillcolor rgb 'white' border lc rgb '#222222' margins 3, 2
# the text above the plot, under the title: beside the circle it would cover the row
# names or the cells
set tmargin 5
set title offset 0, 1.2
if (mark == 1) {
	# two rings, white under black: visible on every colour of the palette
	set label 1 '' at mark_x, mark_y point pt 6 ps 2.6 lw 4 lc rgb 'white' front
	set label 2 '' at mark_x, mark_y point pt 6 ps 2.6 lw 1.5 lc rgb 'black' front
	set label 3 mark_text.' (circled)' at graph 0, graph 1 left offset 0, 1 boxed front \
		tc rgb 'black'
} else { if (mark == 2) {
	set label 3 mark_text at graph 0, graph 1 left offset 0, 1 boxed front tc rgb 'black'
} else {
	set label 3 'no divergence: equal in every traced value' at graph 0, graph 1 left \
		offset 0, 1 boxed front tc rgb 'black'
} }
plot datafile using 1:2:3 with image
