module example.com/app

go 1.19

require example.com/greet v1.0.0
