module libaf.dev/af

go 1.21
