module github.com/go-rdma/rdmacm/bench

go 1.26.0

require github.com/go-rdma/rdmacm v0.0.0

require golang.org/x/sys v0.50.0 // indirect

replace github.com/go-rdma/rdmacm => ../
