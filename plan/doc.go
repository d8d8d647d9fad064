// Package plan turns a search's knees into capacity answers (`pgceiling plan`): the
// headroom at today's peak, the date a growing peak reaches the knee (a range, from the
// knee's interval), what limits each workload and which measured lever moves it, and what
// sharding by wallet would buy given the measured key skew.
//
// It is pure computation on a decoded results file: no database, no clock (the caller
// passes "now"), no flags. Make builds a Plan; WriteText renders it for people and the
// Plan itself is the JSON form.
package plan
