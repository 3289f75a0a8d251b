-- The tests' database (mysql://root@127.0.0.1:3306/test), beside the harvesters' (MARIADB_DATABASE).
CREATE DATABASE IF NOT EXISTS test CHARACTER SET utf8mb4;
