module github.com/switchboardhq/switchboard

go 1.26.8
