"""Paper 004: BuDRO, individually fair gradient boosting via an optimal-transport linear program."""
