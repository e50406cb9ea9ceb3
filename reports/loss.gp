# loss.gp: the loss of every run of a case per step, the mean over its ranks.
load common_gp
set ylabel 'loss (mean over ranks)'
plot for [i=1:n] datafile index (i-1) using 1:2 pt 7 ps 0.4 lw 1.5 title word(names, i)
