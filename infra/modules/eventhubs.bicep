// Event Hubs namespace (local auth off, TLS 1.2) with the accepted-files hub, submit_fn's consumer group, and the
// job-status hub (status and extracted-result events share it; eventType tells them apart).
param location string
param namePrefix string
param tags object
param acceptedHubName string
param acceptedConsumerGroupName string
param statusHubName string
@minValue(1)
@maxValue(32)
param acceptedPartitionCount int = 4
@minValue(1)
@maxValue(32)
param statusPartitionCount int = 4
@minValue(1)
@maxValue(7)
param retentionDays int = 1
@allowed(['Basic', 'Standard', 'Premium'])
param sku string = 'Standard'

resource namespace 'Microsoft.EventHub/namespaces@2024-01-01' = {
  name: 'evhns-${namePrefix}-${uniqueString(resourceGroup().id, namePrefix)}'
  location: location
  tags: tags
  sku: { name: sku, tier: sku, capacity: 1 }
  properties: {
    disableLocalAuth: true
    minimumTlsVersion: '1.2'
    publicNetworkAccess: 'Enabled'
  }
}

resource acceptedHub 'Microsoft.EventHub/namespaces/eventhubs@2024-01-01' = {
  parent: namespace
  name: acceptedHubName
  properties: {
    partitionCount: acceptedPartitionCount
    messageRetentionInDays: retentionDays
  }
}

resource acceptedConsumerGroup 'Microsoft.EventHub/namespaces/eventhubs/consumergroups@2024-01-01' = {
  parent: acceptedHub
  name: acceptedConsumerGroupName
}

resource statusHub 'Microsoft.EventHub/namespaces/eventhubs@2024-01-01' = {
  parent: namespace
  name: statusHubName
  properties: {
    partitionCount: statusPartitionCount
    messageRetentionInDays: retentionDays
  }
}

output namespaceName string = namespace.name
output fullyQualifiedNamespace string = '${namespace.name}.servicebus.windows.net'
