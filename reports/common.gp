# common.gp: settings shared by every plot of 'lockstep report' (harness/report/report.c).
# report.c writes before this file: the terminal and output, then the variables
#   datafile    the data: one block per series (index i-1), columns step, value
#   n           the number of series
#   names       their titles, one word each (run names)
#   title_text  the plot's title
set title title_text
set xlabel 'step'
set grid lc rgb '#dddddd'
set key outside right top box lc rgb '#bbbbbb'
set border lc rgb '#555555'
set datafile missing 'NaN'
set style data linespoints
