# gradnorm.gp: the global gradient norm (before clipping) of every run per step.
load common_gp
set ylabel 'grad norm'
plot for [i=1:n] datafile index (i-1) using 1:2 pt 7 ps 0.4 lw 1.5 title word(names, i)
