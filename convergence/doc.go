// Package convergence reads what `stado service converge` acts from besides
// the declarations, for each caller of fleet's Converge (the command and
// the desktop page's converge): the registry's autonomy caps, the loaded
// units no declaration covers that fresh beacons show (fleet.Sighting), and
// the hosts whose beacons are missing or stale. It decides nothing itself:
// fleet.PlanConverge plans from what it reads.
//
// It is a package of its own because the two halves it joins must not know
// each other: fleet (the write half) reads no beacons, and beacon (the read
// half) never links fleet.
//
// convergence imports beacon (the undeclared units and stale hosts of
// `service list --undeclared`) and fleet (the options it fills and the
// caps). It must not import channel, cli, desktop or autonomy.
package convergence
