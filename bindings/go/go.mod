module github.com/libaf/libaf/bindings/go

go 1.21
