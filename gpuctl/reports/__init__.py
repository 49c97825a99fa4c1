"""Reports over a whole snapshot: cluster capacity and the fleet of Pending pods."""
