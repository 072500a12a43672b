class ModelNew(ModelNew):
    def forward(self, x):
        raise ValueError("this candidate always raises")
