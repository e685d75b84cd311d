"""One progress bar for every long job (certify, fuzz, sweep), on a terminal only."""
