module github.com/godirect/nd

go 1.26
