class ModelNew(ModelNew):
    def forward(self, x):
        while True:
            pass
